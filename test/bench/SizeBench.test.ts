import { describe, expect, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { parseBenchOptions, parseSize } from "../../bench/BenchOptions.js"
import type { RunRecord } from "../../bench/report/RunRecord.js"
import { sizeRows, sizeTable } from "../../bench/size/SizeReport.js"
import { seededSessionId, sizePlan } from "../../bench/size/SizeSeed.js"

describe("--size", () => {
  it("reads 1m, 100k and plain counts, and refuses small or malformed sizes", () => {
    expect(parseSize("1m")).toBe(1_000_000)
    expect(parseSize("250K")).toBe(250_000)
    expect(parseSize("5000")).toBe(5000)
    for (const bad of ["", "1g", "-5", "999", "1.5m", "m"]) expect(() => parseSize(bad), bad).toThrow(/--size/)
    expect(parseBenchOptions(["--size=1m"], {}, 2)).toMatchObject({ size: 1_000_000, sizeConnections: 10 })
    expect(parseBenchOptions([], {}, 2).size).toBeUndefined()
  })

  it("seeds in the issue's proportions", () => {
    expect(sizePlan(1_000_000)).toEqual({ users: 1_000_000, sessions: 500_000, family: 10, auditRows: 2_000_000 })
  })

  it("names a seeded session as md5(...)::uuid does in SQL", () => {
    const hex = createHash("md5").update("seed-session-7").digest("hex")
    expect(seededSessionId(7).replaceAll("-", "")).toBe(hex)
    expect(seededSessionId(7)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
  })
})

const run = (scenario: string, cpu: number, p99: number, errors = 0): RunRecord => ({
  scenario, side: "gatehouse", round: 1, startedAt: "", requests: 100, errors, elapsedMs: 1000, reqPerSec: 100,
  latency: { count: 100, mean: p99 / 2, p50: p99 / 2, p90: p99, p99, max: p99 },
  serverCpuMs: 0, serverCpuMsPerReq: cpu * 0.75, serverProcesses: 3, pgCpuMs: 0, pgCpuMsPerReq: cpu * 0.25, pgProcesses: 5,
  loadCpuMs: 0, otherCpuMs: 0, otherCpuShare: 0, statements: 100, statementsPerReq: 1
})

describe("sizeRows", () => {
  const scenarios = [{ id: "a", title: "A" }, { id: "b", title: "B" }, { id: "c", title: "C" }]

  it("compares server plus PG CPU and p99 at the big size with the small one, against ×1.25", () => {
    const rows = sizeRows(scenarios, [
      { phase: "small", record: run("a", 1, 10) },
      { phase: "small", record: run("a", 3, 30) },
      { phase: "large", record: run("a", 2.5, 25) },
      { phase: "small", record: run("b", 1, 10) },
      { phase: "large", record: run("b", 1.3, 10) },
      { phase: "small", record: run("c", 1, 10) },
      { phase: "large", record: run("c", 1, 10, 3) }
    ])
    expect(rows[0]).toMatchObject({ id: "a", cpuRatio: 1.25, p99Ratio: 1.25, met: true })
    expect(rows[0]!.small!.cpuMsPerReq).toBe(2)
    expect(rows[1]).toMatchObject({ id: "b", met: false })
    expect(rows[1]!.cpuRatio).toBeCloseTo(1.3)
    // A failed request fails the row whatever the ratios.
    expect(rows[2]).toMatchObject({ id: "c", cpuRatio: 1, met: false })
    const table = sizeTable(rows, { small: "200", large: "1M" })
    expect(table).toContain("| A | 100 / 100 | 2.00 / 2.50 | ×1.25 |")
    expect(table).toContain("**no** (failed requests)")
  })

  it("leaves a scenario measured at one size only undecided", () => {
    const [row] = sizeRows([{ id: "a", title: "A" }], [{ phase: "small", record: run("a", 1, 10) }])
    expect(row!.met).toBeUndefined()
    expect(row!.cpuRatio).toBeNaN()
  })
})
