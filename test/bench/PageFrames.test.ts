import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import fc from "fast-check"
import { pageFrame, residentRanges, uniqueResidentMb } from "../../bench/PageFrames.js"

const SMAPS = `00400000-00402000 r--p 00000000 fe:01 123 /usr/bin/node
Size:                  8 kB
Rss:                   8 kB
Pss:                   2 kB
7f0000000000-7f0000100000 ---p 00000000 00:00 0
Size:               1024 kB
Rss:                   0 kB
7f0000100000-7f0000104000 rw-p 00000000 00:00 0
Size:                 16 kB
Rss:                   4 kB
VmFlags: rd wr mr mw me ac
`

const isRoot = process.getuid?.() === 0

/** A node process that holds `mb` of anonymous memory it has written (so it is resident), until stopped. */
const holder = async (mb: number) => {
  const script = `const b = Buffer.alloc(${mb} * 1024 * 1024, 1); console.log("ready"); setInterval(() => b[0]++, 1000)`
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] })
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve())
    child.once("exit", (code) => reject(new Error(`the holder exited (${code})`)))
  })
  return { pid: child.pid!, stop: () => child.kill("SIGTERM") }
}

describe("PageFrames", () => {
  it("keeps the mappings with resident pages, as page ranges", () => {
    expect(residentRanges(SMAPS)).toStrictEqual([
      { firstPage: 0x400, endPage: 0x402 },
      { firstPage: 0x7f0000100, endPage: 0x7f0000104 }
    ])
    expect(residentRanges("")).toStrictEqual([])
  })

  it("reads a present page's frame from bits 0-54, hides a present frame of 0, and skips a page not present", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 2 ** 53 - 1 }), fc.integer({ min: 0, max: 0xff }), (frame, flags) => {
      const framed = frame % 2 ** 55
      const low = framed % 2 ** 32
      // Bits 55–62 (soft-dirty, exclusive, file/shared, swapped...) must not leak into the frame number.
      const high = (Math.floor(framed / 2 ** 32) | ((flags & 0x7f) << 23) | 0x8000_0000) >>> 0
      expect(pageFrame(low, high)).toBe(framed)
      expect(pageFrame(low, high & 0x7fff_ffff)).toBeUndefined()
    }))
    expect(pageFrame(0, 0x8000_0000)).toBe("hidden")
    expect(pageFrame(0, 0)).toBeUndefined()
  })

  it.skipIf(!isRoot)("counts a page mapped by two processes once, and each process's own pages", async () => {
    // Two node processes each holding 64 MB of their own: node's code is the same physical pages in both, so
    // together they hold less than the sum of their RSS, and at least both buffers.
    const [a, b] = await Promise.all([holder(64), holder(64)])
    try {
      const rss = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024
      const one = uniqueResidentMb([a.pid])!
      const both = uniqueResidentMb([a.pid, b.pid])!
      expect(one).toBeGreaterThan(64)
      expect(one).toBeLessThanOrEqual(rss(a.pid) + 1)
      expect(both).toBeGreaterThan(128)
      expect(both).toBeLessThan(rss(a.pid) + rss(b.pid) - 10)
      expect(uniqueResidentMb([a.pid, a.pid])).toBeCloseTo(one, 0)
    } finally {
      a.stop()
      b.stop()
    }
  })

  it("adds nothing for a process that is gone", () => {
    expect(uniqueResidentMb([2 ** 22 + 12345])).toBe(0)
  })
})
