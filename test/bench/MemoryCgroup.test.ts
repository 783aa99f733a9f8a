import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseBenchOptions } from "../../bench/BenchOptions.js"
import { cgroupPlace, createMemoryCgroup, keyValues, privateNode } from "../../bench/MemoryCgroup.js"
import { cgroupText } from "../../bench/soak/SoakReport.js"

const V1 = `9:name=systemd:/
8:pids:/
4:memory:/process_api/39f1241c
3:cpuset:/
0::/
`

/** Whether this machine lets the test make a memory cgroup (root with a writable cgroup filesystem). */
const probe = createMemoryCgroup(64, `gatehouse-test-probe-${process.pid}`)
const canMake = typeof probe !== "string"
if (typeof probe !== "string") probe.remove()

describe("MemoryCgroup", () => {
  it("finds this process's memory cgroup: v1's memory line first, else v2's unified one", () => {
    expect(cgroupPlace(V1)).toStrictEqual({ version: 1, path: "/process_api/39f1241c" })
    expect(cgroupPlace("5:cpu,cpuacct:/a\n3:memory,hugetlb:/b/c\n")).toStrictEqual({ version: 1, path: "/b/c" })
    expect(cgroupPlace("0::/user.slice/session-1.scope\n")).toStrictEqual({ version: 2, path: "/user.slice/session-1.scope" })
    expect(cgroupPlace("0::/\n")).toStrictEqual({ version: 2, path: "/" })
    expect(cgroupPlace("")).toBeUndefined()
  })

  it("takes --memory-limit in whole MB, only with --soak", () => {
    expect(parseBenchOptions(["--soak", "--memory-limit=250"], {}, 2)).toMatchObject({ memoryLimitMb: 250 })
    expect(parseBenchOptions(["--soak=90s"], {}, 2).memoryLimitMb).toBeUndefined()
    expect(() => parseBenchOptions(["--memory-limit=250"], {}, 2)).toThrow(/give it with --soak/)
    for (const bad of ["", "0", "63", "250.5", "250m", "-1"]) {
      expect(() => parseBenchOptions(["--soak", `--memory-limit=${bad}`], {}, 2), bad).toThrow(/--memory-limit wants whole MB/)
    }
  })

  it("reads key-value files, skipping what is not a count", () => {
    expect(keyValues("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")).toStrictEqual(new Map([["oom_kill_disable", 0], ["under_oom", 0], ["oom_kill", 3]]))
    expect(keyValues("anon 1048576\nfile 2097152\n\nbad x\n")).toStrictEqual(new Map([["anon", 1048576], ["file", 2097152]]))
  })

  it("says what the limited soak measured, and what the kernel did not report", () => {
    const reading = { limitMb: 250, peakMb: 231, currentMb: 200, anonMb: 180, fileMb: 20, oomKills: 0 }
    const text = cgroupText({ idle: { ...reading, currentMb: 150 }, after: reading })
    expect(text).toContain("limited to 250 MB")
    expect(text).toContain("the most at once, start-up included: 231 MB")
    expect(text).toContain("processes killed for want of memory: 0.")
    expect(text).not.toContain("reclaimed")
    expect(cgroupText({ idle: reading, after: { ...reading, peakMb: 250 } })).toContain("250 MB (the limit: the kernel reclaimed page cache")
    expect(cgroupText({ idle: reading, after: { ...reading, oomKills: undefined } })).toContain("not reported by this kernel")
  })

  it.skipIf(!canMake)("holds a process to the limit: what fits runs, what does not is killed and counted", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gatehouse-cgroup-"))
    const group = createMemoryCgroup(96, `gatehouse-test-${process.pid}`)
    if (typeof group === "string") throw new Error(group)
    try {
      const node = privateNode(join(dir, "node"))
      // Holds `mb` of written (so resident) memory, then says how much.
      const hold = (mb: number) =>
        new Promise<{ code: number | null; signal: string | null; out: string }>((resolve) => {
          const script = `const held = []; for (let i = 0; i < ${mb}; i++) held.push(Buffer.alloc(1 << 20, 1)); console.log("held " + held.length)`
          // Moved in at once: what node touches while starting, before the move, stays charged outside (a few MB).
          const child = spawn(node, ["-e", script], { stdio: ["ignore", "pipe", "ignore"] })
          group.enter(child.pid!)
          let out = ""
          child.stdout!.on("data", (d: Buffer) => (out += d.toString("utf8")))
          child.once("exit", (code, signal) => resolve({ code, signal, out }))
        })
      const fits = await hold(16)
      expect(fits).toMatchObject({ code: 0, out: "held 16\n" })
      const before = group.read()
      expect(before.peakMb).toBeGreaterThan(16)
      expect(before.peakMb).toBeLessThanOrEqual(96)
      const tooMuch = await hold(200)
      expect(tooMuch.signal).toBe("SIGKILL")
      expect(tooMuch.out).toBe("")
      const after = group.read()
      expect(after.oomKills).toBeGreaterThan(before.oomKills!)
      expect(after.peakMb).toBe(96)
    } finally {
      group.remove()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
