import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { processTree } from "../../bench/ProcessCpu.js"
import { assignRoles, memoryRows, PAGES_ONCE, parseSmapsRollup, type ProcessMemory, treeMemory, treeProcesses } from "../../bench/ProcessMemory.js"
import { memoryTable } from "../../bench/report/MemoryTable.js"

const ROLLUP = `55d4c3a00000-7ffd8b5f0000 ---p 00000000 00:00 0                          [rollup]
Rss:              204800 kB
Pss:              163840 kB
Pss_Anon:         120000 kB
Shared_Clean:      40000 kB
`

const m = (rssMb: number, pssMb = rssMb): ProcessMemory => ({ rssMb, pssMb })

describe("ProcessMemory", () => {
  it("reads Rss and Pss from smaps_rollup, in MB", () => {
    expect(parseSmapsRollup(ROLLUP)).toStrictEqual({ rssMb: 200, pssMb: 160 })
    expect(parseSmapsRollup("Rss: 1024 kB\n")).toBeUndefined()
    expect(parseSmapsRollup("")).toBeUndefined()
  })

  it("reports each role's idle RSS and its mean and max under load, and the tree's total last", () => {
    const idle = new Map([["primary", m(60)], ["worker-1", m(90)], ["worker-2", m(80)]])
    const samples = [
      new Map([["primary", m(60)], ["worker-1", m(100, 70)], ["worker-2", m(110)]]),
      new Map([["primary", m(62)], ["worker-1", m(120, 90)], ["worker-2", m(100)]])
    ]
    const perProcess = [
      { role: "primary", idleRssMb: 60, loadMeanRssMb: 61, loadMaxRssMb: 62, loadMaxPssMb: 62 },
      { role: "worker-1", idleRssMb: 90, loadMeanRssMb: 110, loadMaxRssMb: 120, loadMaxPssMb: 90 },
      { role: "worker-2", idleRssMb: 80, loadMeanRssMb: 105, loadMaxRssMb: 110, loadMaxPssMb: 110 },
      { role: "total", idleRssMb: 230, loadMeanRssMb: 276, loadMaxRssMb: 282, loadMaxPssMb: 252 }
    ]
    // Without frame numbers (not root) there is no row of the tree's pages counted once.
    expect(memoryRows({ processes: idle, uniqueMb: undefined }, samples.map((processes) => ({ processes, uniqueMb: undefined }))))
      .toStrictEqual(perProcess)
    // With them, a row after "total": its idle figure, and the mean and max of the samples that had one.
    expect(memoryRows({ processes: idle, uniqueMb: 150 }, samples.map((processes, i) => ({ processes, uniqueMb: [190, 200][i] }))))
      .toStrictEqual([...perProcess, { role: PAGES_ONCE, idleRssMb: 150, loadMeanRssMb: 195, loadMaxRssMb: 200, loadMaxPssMb: undefined }])
  })

  it("shows a role seen only at idle with dashes under load", () => {
    const rows = memoryRows({ processes: new Map([["single", m(300)]]), uniqueMb: undefined }, [])
    expect(memoryTable([{ side: "gatehouse", rows }])).toContain("| gatehouse | single | 300 | – | – | – |")
  })

  it("names the root primary and the others workers in the order they started, or the root single when alone", () => {
    expect(assignRoles(10, [{ pid: 10, startTicks: 1 }])).toStrictEqual([{ role: "single", pid: 10 }])
    expect(assignRoles(10, [])).toStrictEqual([{ role: "single", pid: 10 }])
    expect(assignRoles(10, [{ pid: 10, startTicks: 1 }, { pid: 30, startTicks: 5 }, { pid: 20, startTicks: 7 }, { pid: 25, startTicks: 5 }]))
      .toStrictEqual([
        { role: "primary", pid: 10 },
        { role: "worker-1", pid: 25 },
        { role: "worker-2", pid: 30 },
        { role: "worker-3", pid: 20 }
      ])
  })

  it("finds the workers of a server started with --title, as the bench starts them (they were reported as one \"single\")", async () => {
    // A parent and a child, both titled as bench servers are (node:cluster passes the parent's --title on to its
    // workers), so neither one's comm is "node". The parent prints "ready" once the child has started.
    const title = "--title=gatehouse-bench-memtest"
    const childScript = `console.log("up"); setInterval(() => {}, 1000)`
    const parentScript = `
      const { spawn } = require("node:child_process")
      const child = spawn(process.execPath, [${JSON.stringify(title)}, "-e", ${JSON.stringify(childScript)}], { stdio: ["ignore", "pipe", "inherit"] })
      child.stdout.once("data", () => console.log("ready " + child.pid))
      process.on("SIGTERM", () => { child.kill("SIGTERM"); process.exit(0) })
      setInterval(() => {}, 1000)`
    const parent = spawn(process.execPath, [title, "-e", parentScript], { stdio: ["ignore", "pipe", "inherit"] })
    try {
      const childPid = await new Promise<number>((resolve, reject) => {
        parent.stdout!.on("data", (chunk: Buffer) => {
          const match = /ready (\d+)/.exec(chunk.toString("utf8"))
          if (match !== null) resolve(Number(match[1]))
        })
        parent.once("exit", (code) => reject(new Error(`the test server exited (${code})`)))
      })
      expect(readFileSync(`/proc/${parent.pid}/comm`, "utf8").trim()).toBe("gatehouse-bench")
      expect(processTree(parent.pid!).map((p) => p.pid)).toContain(childPid)
      const found = treeProcesses(parent.pid!)
      expect(found.map(({ pid, role }) => ({ pid, role }))).toStrictEqual([
        { role: "primary", pid: parent.pid },
        { role: "worker-1", pid: childPid }
      ])
      for (const p of found) expect(p.rssMb).toBeGreaterThan(1)
      // Two node processes share node's code: counted once, the tree holds less than the sum of the RSS.
      const tree = treeMemory(parent.pid!)
      if (process.getuid?.() === 0) expect(tree.uniqueMb!).toBeLessThan(found.reduce((sum, p) => sum + p.rssMb, 0))
      else expect(tree.uniqueMb).toBeUndefined()
    } finally {
      parent.kill("SIGTERM")
    }
  })
})
