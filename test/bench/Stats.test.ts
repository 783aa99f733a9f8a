import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { parseBenchOptions } from "../../bench/BenchOptions.js"
import { parseMachineBusyTicks, parseProcStat } from "../../bench/ProcessCpu.js"
import { mean, percentile, ratio, summarizeLatencies } from "../../bench/report/Stats.js"

describe("percentile", () => {
  const hundred = Array.from({ length: 100 }, (_, i) => i + 1)

  it("is the nearest rank: the smallest value that p% of the values do not exceed", () => {
    expect(percentile(hundred, 50)).toBe(50)
    expect(percentile(hundred, 99)).toBe(99)
    expect(percentile(hundred, 100)).toBe(100)
    expect(percentile(hundred, 0.1)).toBe(1)
    expect(percentile([7], 99)).toBe(7)
    expect(percentile([1, 2, 3, 4], 50)).toBe(2)
    expect(percentile([], 50)).toBeNaN()
  })

  it.prop(
    "is one of the values, with at least p% at or below it and fewer than p% below it",
    { values: FastCheck.array(FastCheck.double({ min: 0, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 200 }), p: FastCheck.integer({ min: 1, max: 100 }) },
    ({ p, values }) => {
      const sorted = Float64Array.from(values).sort()
      const value = percentile(sorted, p)
      expect(values).toContain(value)
      expect(values.filter((v) => v <= value).length).toBeGreaterThanOrEqual((p / 100) * values.length)
      expect(values.filter((v) => v < value).length).toBeLessThan((p / 100) * values.length)
    }
  )
})

describe("summarizeLatencies", () => {
  it("sorts numerically, not as strings", () => {
    expect(summarizeLatencies([10, 9, 100, 2, 1])).toStrictEqual({ count: 5, mean: 24.4, p50: 9, p90: 100, p99: 100, max: 100 })
  })

  it("has nothing to say about no latencies", () => {
    const empty = summarizeLatencies([])
    expect(empty.count).toBe(0)
    expect([empty.mean, empty.p50, empty.p99, empty.max].every(Number.isNaN)).toBe(true)
  })
})

describe("ratio and mean", () => {
  it("is ours over minimal, and NaN where there is no meaningful ratio", () => {
    expect(ratio(370, 1000)).toBeCloseTo(0.37)
    expect(ratio(3.3, 1.1)).toBeCloseTo(3)
    expect(ratio(1, 0)).toBeNaN()
    expect(ratio(Number.NaN, 1)).toBeNaN()
    expect(mean([1, 2, 6])).toBe(3)
    expect(mean([])).toBeNaN()
  })
})

describe("/proc parsing", () => {
  it("reads a process's CPU fields even when its name has spaces and parentheses", () => {
    const line = "4242 (node (vitest 1)) S 4200 4242 4242 0 -1 4194560 100 0 0 0 120 30 7 3 20 0 11 0 98765 1000 200"
    expect(parseProcStat(line)).toStrictEqual({ pid: 4242, ppid: 4200, ownTicks: 150, childTicks: 10, startTicks: 98765, zombie: false })
    expect(parseProcStat("garbage")).toBeUndefined()
  })

  it("counts the machine's busy time without idle and iowait", () => {
    expect(parseMachineBusyTicks("cpu  100 5 50 1000 40 1 2 3 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")).toBe(161)
  })
})

describe("parseBenchOptions", () => {
  it("defaults to 2 s warm-up, 8 s measured, two rounds, one worker per CPU", () => {
    expect(parseBenchOptions([], {}, 2)).toMatchObject({
      quick: false, sqlOnly: false, warmupMs: 2000, durationMs: 8000, rounds: 2, workers: 2, connections: 50
    })
  })

  it("shortens everything for --quick and takes BENCH_* overrides", () => {
    expect(parseBenchOptions(["--quick"], {}, 4)).toMatchObject({ quick: true, durationMs: 2000, rounds: 1, workers: 4 })
    expect(parseBenchOptions(["--only=user,refresh"], { BENCH_DURATION: "20", BENCH_WORKERS: "1" }, 2))
      .toMatchObject({ only: ["user", "refresh"], durationMs: 20000, workers: 1 })
    expect(() => parseBenchOptions(["--fast"], {}, 2)).toThrow(/unknown argument/)
    expect(() => parseBenchOptions([], { BENCH_DURATION: "0" }, 2)).toThrow(/BENCH_DURATION/)
  })
})
