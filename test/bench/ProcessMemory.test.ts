import { describe, expect, it } from "@effect/vitest"
import { memoryRows, parseSmapsRollup, type ProcessMemory } from "../../bench/ProcessMemory.js"
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
    expect(memoryRows(idle, samples)).toStrictEqual([
      { role: "primary", idleRssMb: 60, loadMeanRssMb: 61, loadMaxRssMb: 62, loadMaxPssMb: 62 },
      { role: "worker-1", idleRssMb: 90, loadMeanRssMb: 110, loadMaxRssMb: 120, loadMaxPssMb: 90 },
      { role: "worker-2", idleRssMb: 80, loadMeanRssMb: 105, loadMaxRssMb: 110, loadMaxPssMb: 110 },
      { role: "total", idleRssMb: 230, loadMeanRssMb: 276, loadMaxRssMb: 282, loadMaxPssMb: 252 }
    ])
  })

  it("shows a role seen only at idle with dashes under load", () => {
    const rows = memoryRows(new Map([["single", m(300)]]), [])
    expect(memoryTable([{ side: "gatehouse", rows }])).toContain("| gatehouse | single | 300 | – | – | – |")
  })
})
