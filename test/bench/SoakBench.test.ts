import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { parseBenchOptions } from "../../bench/BenchOptions.js"
import type { ProcessReading } from "../../bench/ProcessMemory.js"
import { FLOOR_MB, growthVerdict, leastSquares, type Point } from "../../bench/soak/GrowthVerdict.js"
import { edgeWindowMs, formatDuration, parseSoakDuration, soakSampleIntervalMs } from "../../bench/soak/SoakDuration.js"
import { soakDocument, soakTable, verdictText } from "../../bench/soak/SoakReport.js"
import { PAGES_ONCE } from "../../bench/ProcessMemory.js"
import { type SoakSample, summarizeSoak } from "../../bench/soak/SoakSummary.js"

const MIN = 60_000
const TEN_MIN = 10 * MIN

describe("--soak", () => {
  it("reads durations with units, and refuses bare numbers, fractions and runs under a minute or over a day", () => {
    expect(parseSoakDuration("10m")).toBe(TEN_MIN)
    expect(parseSoakDuration("90s")).toBe(90_000)
    expect(parseSoakDuration("1h")).toBe(3_600_000)
    expect(parseSoakDuration("1m30s")).toBe(90_000)
    expect(parseSoakDuration(" 2M ")).toBe(2 * MIN)
    for (const bad of ["", "10", "30s", "59s", "25h", "1.5m", "m", "10x", "-1m", "1s1m", "10 m"]) {
      expect(() => parseSoakDuration(bad), bad).toThrow(/--soak/)
    }
  })

  it("defaults to ten minutes, and is a run of its own", () => {
    expect(parseBenchOptions(["--soak"], {}, 2).soak).toBe(TEN_MIN)
    expect(parseBenchOptions(["--soak=90s"], {}, 2).soak).toBe(90_000)
    expect(parseBenchOptions([], {}, 2).soak).toBeUndefined()
    expect(() => parseBenchOptions(["--soak=10"], {}, 2)).toThrow(/--soak/)
    expect(() => parseBenchOptions(["--soak", "--size=1m"], {}, 2)).toThrow(/one/)
    expect(() => parseBenchOptions(["--soaked"], {}, 2)).toThrow(/unknown argument --soaked/)
  })

  it("samples every 10 s, more often in a short run, and compares minutes that never overlap", () => {
    expect(soakSampleIntervalMs(TEN_MIN)).toBe(10_000)
    expect(soakSampleIntervalMs(3_600_000)).toBe(10_000)
    expect(soakSampleIntervalMs(5 * MIN)).toBe(5_000)
    expect(soakSampleIntervalMs(90_000)).toBe(2_000)
    expect(soakSampleIntervalMs(MIN)).toBe(2_000)
    expect(edgeWindowMs(TEN_MIN)).toBe(MIN)
    expect(edgeWindowMs(90_000)).toBe(30_000)
    expect([formatDuration(TEN_MIN), formatDuration(90_000), formatDuration(MIN), formatDuration(3_605_000)])
      .toStrictEqual(["10 min", "90 s", "1 min", "1 h 5 s"])
  })
})

/** Samples every `intervalMs` of a `runMs` run (the sampler's grid), RSS from `mb(t)`. */
const grid = (runMs: number, intervalMs: number, mb: (atMs: number, k: number) => number): Array<Point> =>
  Array.from({ length: Math.floor(runMs / intervalMs) }, (_, i) => ({ atMs: (i + 1) * intervalMs, mb: mb((i + 1) * intervalMs, i) }))

describe("growthVerdict", () => {
  it("fits a line by least squares", () => {
    const { slope, standardError } = leastSquares([{ atMs: 0, mb: 1 }, { atMs: 10, mb: 3 }, { atMs: 20, mb: 5 }])
    expect(slope).toBeCloseTo(0.2)
    expect(standardError).toBeCloseTo(0)
    expect(leastSquares([{ atMs: 5, mb: 1 }]).slope).toBeNaN()
    expect(leastSquares([{ atMs: 5, mb: 1 }, { atMs: 5, mb: 2 }]).slope).toBeNaN()
  })

  it("calls a constant flat and a leak of 1 MB a minute in a 180 MB worker over ten minutes growth", () => {
    const constant = growthVerdict(grid(TEN_MIN, 10_000, () => 180), TEN_MIN)
    expect(constant).toMatchObject({ kind: "flat", trendMb: 0, points: 31 })
    expect(constant.toleranceMb).toBeCloseTo(5.4)
    const leak = growthVerdict(grid(TEN_MIN, 10_000, (t) => 180 + t / MIN), TEN_MIN)
    expect(leak.kind).toBe("growing")
    expect(leak.slopeMbPerMin).toBeCloseTo(1)
    expect(leak.trendMb).toBeCloseTo(10)
  })

  it("ignores the first half's warm-up, calls a fall flat, and will not judge three samples short", () => {
    // 100 → 160 MB over the first three minutes, then level: what V8 and the heap do at the start of any load.
    const warm = growthVerdict(grid(TEN_MIN, 10_000, (t) => 100 + 60 * Math.min(1, t / (3 * MIN))), TEN_MIN)
    expect(warm.kind).toBe("flat")
    expect(growthVerdict(grid(TEN_MIN, 10_000, (t) => 500 - t / 1000), TEN_MIN).kind).toBe("flat")
    expect(growthVerdict(grid(TEN_MIN, 200_000, (t) => t), TEN_MIN)).toMatchObject({ kind: "too few samples", points: 2 })
  })

  it("does not call a slope within its own noise growth", () => {
    // ±20 MB alternating, with a 12 MB trend: above the tolerance, well inside two standard errors.
    const noisy = growthVerdict(grid(TEN_MIN, 10_000, (t, k) => 100 + (k % 2 === 0 ? 20 : -20) + (12 * t) / TEN_MIN), TEN_MIN)
    expect(noisy.trendMb).toBeGreaterThan(noisy.toleranceMb)
    expect(noisy.kind).toBe("flat")
  })

  it("holds the worst pattern of ±a noise (a step halfway through the fitted half) to a trend of 6a", () => {
    const a = 1
    const step = growthVerdict(grid(TEN_MIN, 10_000, (t) => 200 + (t < 0.75 * TEN_MIN ? -a : a)), TEN_MIN)
    expect(step.trendMb).toBeLessThanOrEqual(6 * a)
    expect(step.trendMb).toBeGreaterThan(5 * a)
  })

  const runs = FastCheck.record({
    runMs: FastCheck.integer({ min: MIN, max: 4 * 3_600_000 }),
    samples: FastCheck.integer({ min: 20, max: 200 }),
    level: FastCheck.double({ min: 20, max: 1000, noNaN: true })
  })

  /** Noise in [−1, 1], often at its bounds, where the worst patterns are: a step, or the signs of a climb. */
  const unitNoise = FastCheck.oneof(
    FastCheck.array(FastCheck.oneof(FastCheck.double({ min: -1, max: 1, noNaN: true }), FastCheck.constantFrom(-1, 1)), { minLength: 200, maxLength: 200 }),
    FastCheck.integer({ min: 0, max: 200 }).map((cut) => Array.from({ length: 200 }, (_, k) => (k < cut ? -1 : 1)))
  )

  it.prop(
    "a series within ±0.7 MB of its level is flat, whatever the pattern of its noise",
    { run: runs, unit: unitNoise },
    ({ run, unit }) => {
      const points = grid(run.runMs, run.runMs / run.samples, (_, k) => run.level + 0.7 * unit[k]!)
      const verdict = growthVerdict(points, run.runMs)
      expect(verdict.trendMb).toBeLessThan(FLOOR_MB)
      expect(verdict.kind).toBe("flat")
    }
  )

  it.prop(
    "a steady climb a little above the tolerance is growth, through noise of up to ±1 MB",
    {
      run: runs,
      amplitude: FastCheck.double({ min: 0, max: 1, noNaN: true }),
      unit: unitNoise,
      extra: FastCheck.double({ min: 0, max: 500, noNaN: true })
    },
    ({ amplitude, extra, run, unit }) => {
      const growth = 0.1 * run.level + 10 + 35 * amplitude + extra
      const points = grid(run.runMs, run.runMs / run.samples, (t, k) => run.level + (growth * t) / run.runMs + amplitude * unit[k]!)
      expect(growthVerdict(points, run.runMs).kind).toBe("growing")
    }
  )
})

const reading = (role: string, pid: number, rssMb: number): ProcessReading => ({ role, pid, rssMb, pssMb: rssMb })

describe("summarizeSoak", () => {
  const idle = [reading("primary", 1, 100), reading("worker-1", 2, 150), reading("worker-2", 3, 150)]
  const samples: Array<SoakSample> = grid(TEN_MIN, 10_000, (t) => t).map(({ atMs }, k) => ({
    atMs,
    requests: 1000 * (k + 1),
    failed: 0,
    processes: [
      reading("primary", 1, 110),
      reading("worker-1", 2, 170 + atMs / MIN),
      // worker-2 replaced half-way through.
      atMs < TEN_MIN / 2 ? reading("worker-2", 3, 180) : reading("worker-2", 4, 120)
    ]
  }))
  const summary = summarizeSoak(idle, samples, TEN_MIN)
  const documentOf = (durationMs: number) => ({
    startedAt: "2026-11-27T03:00:00.000Z", commit: "abc1234", durationMs, sampleIntervalMs: 10_000, edgeWindowMs: MIN,
    workers: 2, mix: { user: 6, refresh: 3, signup: 1 }, summary,
    counts: { user: { requests: 50_000, failed: 0 }, refresh: { requests: 9_000, failed: 2, firstError: "HTTP 500" }, signup: { requests: 1_000, failed: 0 } },
    chainRestarts: 2, loadAverage: { before: [0.1, 0.2, 0.3], after: [2, 2, 2] }
  })

  it("gives each process and the tree their idle RSS, first- and last-minute means, max, growth and verdict", () => {
    expect(summary.rows.map((r) => r.role)).toStrictEqual(["primary", "worker-1", "worker-2", "total"])
    const [primary, worker1, worker2, total] = summary.rows
    expect(primary).toMatchObject({ pids: [1], idleMb: 100, firstMinuteMb: 110, lastMinuteMb: 110, maxMb: 110, growthMb: 0, growthShare: 0 })
    expect(primary!.verdict.kind).toBe("flat")
    // First minute: samples at 10…60 s (mean 35 s); last minute: 540…600 s (mean 570 s).
    expect(worker1!.firstMinuteMb).toBeCloseTo(170 + 35 / 60)
    expect(worker1!.lastMinuteMb).toBeCloseTo(170 + 570 / 60)
    expect(worker1!.growthMb).toBeCloseTo(535 / 60)
    expect(worker1!.maxMb).toBeCloseTo(180)
    expect(worker1!.verdict.kind).toBe("growing")
    expect(worker2!.pids).toStrictEqual([3, 4])
    expect(verdictText(worker2!)).toContain("replaced during the run: pids 3, 4")
    expect(total).toMatchObject({ idleMb: 400, pids: [1, 2, 3, 4] })
    expect(total!.firstMinuteMb).toBeCloseTo(110 + 170 + 35 / 60 + 180)
    expect(summary.samples).toBe(60)
    expect(summary.firstMinutePerSec).toBe(100)
    expect(summary.lastMinutePerSec).toBe(100)
  })

  it("writes a table with the verdict per process and the rule it follows", () => {
    const table = soakTable(summary.rows, "minute")
    expect(table).toContain("| primary | 1 | 100 | 110 | 110 | 110 | +0.000 | +0.0 % |")
    expect(table).toContain("| worker-1 | 2 | 150 |")
    expect(table).toMatch(/\| worker-1 .* \*\*growing\*\* \|$/m)
    expect(table).toMatch(/\| primary .* no growth beyond noise \|$/m)
    expect(table).toContain("| **whole tree** |  | 400 |")
    const document = soakDocument(documentOf(TEN_MIN))
    expect(document).toContain("60000 answered, 2 failed (first: HTTP 500)")
    expect(document).toContain("refresh grants 9000 (2 failed)")
    expect(document).toContain("2 refresh chain(s) started again")
    expect(document).toContain("max(5 MB, 3 % of the process's level)")
    expect(document).toContain("6 GET /user, 3 refresh chains, 1 sign-up in flight")
    expect(document).not.toContain("check of the harness")
    expect(soakDocument({ ...documentOf(90_000) })).toContain("check of the harness")
  })

  it("adds the tree with each page counted once, with its own verdict, when the samples have it", () => {
    // The tree holds 300 MB counted once, flat, while the sum of RSS above grows with worker-1.
    const counted = summarizeSoak(idle, samples.map((s) => ({ ...s, uniqueMb: 300 })), TEN_MIN, 250)
    expect(counted.rows.map((r) => r.role)).toStrictEqual(["primary", "worker-1", "worker-2", "total", PAGES_ONCE])
    const [, , , total, once] = counted.rows
    expect(once).toMatchObject({ idleMb: 250, firstMinuteMb: 300, lastMinuteMb: 300, maxMb: 300, growthMb: 0, pids: total!.pids })
    expect(once!.verdict.kind).toBe("flat")
    expect(soakTable(counted.rows, "minute")).toContain("| **whole tree, each page once** |  | 250 | 300 | 300 | 300 |")
    expect(soakDocument({ ...documentOf(TEN_MIN), summary: counted })).toContain("Whole tree with each physical page counted once")
    // Not root: no such row, and no line about it.
    expect(summary.rows.map((r) => r.role)).not.toContain(PAGES_ONCE)
    expect(soakDocument(documentOf(TEN_MIN))).not.toContain("each physical page")
  })

  it.prop(
    "the tree's means are the sum of its processes' when every sample has every process",
    { levels: FastCheck.array(FastCheck.array(FastCheck.double({ min: 10, max: 500, noNaN: true }), { minLength: 30, maxLength: 30 }), { minLength: 1, maxLength: 4 }) },
    ({ levels }) => {
      const roles = levels.map((_, i) => (i === 0 ? "primary" : `worker-${i}`))
      const series: Array<SoakSample> = Array.from({ length: 30 }, (_, k) => ({
        atMs: (k + 1) * 3_000,
        requests: k,
        failed: 0,
        processes: levels.map((values, i) => reading(roles[i]!, i + 1, values[k]!))
      }))
      const { rows } = summarizeSoak([], series, 90_000)
      const total = rows.at(-1)!
      const sum = (pick: (r: (typeof rows)[number]) => number | undefined) => rows.slice(0, -1).reduce((n, r) => n + pick(r)!, 0)
      expect(total.firstMinuteMb).toBeCloseTo(sum((r) => r.firstMinuteMb), 6)
      expect(total.lastMinuteMb).toBeCloseTo(sum((r) => r.lastMinuteMb), 6)
      expect(total.maxMb).toBeLessThanOrEqual(sum((r) => r.maxMb) + 1e-9)
    }
  )
})
