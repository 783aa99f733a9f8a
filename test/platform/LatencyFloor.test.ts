import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { LATENCY_SAMPLES, latencyFloor, MAX_LATENCY_FLOOR_MS, medianOf, paddingFor, slowestBranch, withSample } from "../../src/platform/http/LatencyFloor.js"

const durations = FastCheck.array(FastCheck.double({ min: 0, max: 5000, noNaN: true }), { minLength: 1, maxLength: 200 })
const draw = FastCheck.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })

describe("LatencyFloor", () => {
  it.prop("keeps the last LATENCY_SAMPLES durations, newest last", [durations], ([all]) => {
    const kept = all.reduce<ReadonlyArray<number>>(withSample, [])
    expect(kept).toEqual(all.slice(-LATENCY_SAMPLES))
  })

  it.prop("a floor is one of the samples, or the cap", [durations, draw], ([all, u]) => {
    const samples = all.slice(-LATENCY_SAMPLES)
    const floor = latencyFloor(samples, u)
    expect(floor).toBeLessThanOrEqual(MAX_LATENCY_FLOOR_MS)
    expect(samples.includes(floor) || (floor === MAX_LATENCY_FLOOR_MS && samples.some((ms) => ms > MAX_LATENCY_FLOOR_MS))).toBe(true)
  })

  it("every sample is drawn equally often: draws spread evenly over [0, 1) pick each sample the same number of times", () => {
    const samples = [5, 1, 9, 3]
    const picks = Array.from({ length: 400 }, (_, i) => latencyFloor(samples, i / 400))
    expect(samples.map((ms) => picks.filter((pick) => pick === ms).length)).toEqual([100, 100, 100, 100])
  })

  it.prop("the median has as many samples at or under it as over it, give or take the middle one", [durations], ([samples]) => {
    const median = medianOf(samples)
    expect(samples).toContain(median)
    expect(samples.filter((ms) => ms < median).length).toBeLessThanOrEqual(Math.floor((samples.length - 1) / 2))
    expect(samples.filter((ms) => ms > median).length).toBeLessThanOrEqual(Math.ceil((samples.length - 1) / 2))
  })

  it.prop("a branch waits the target less the time its work took and the timer's lateness, never a negative time", [FastCheck.nat(2000), FastCheck.nat(2000), FastCheck.nat(20)], ([target, elapsed, late]) => {
    const wait = paddingFor(target, elapsed, late)
    expect(wait).toBe(Math.max(0, target - elapsed - late))
    // Its work, the wait and the timer's lateness add up to the target whenever the target is longer.
    if (target >= elapsed + late) expect(elapsed + wait + late).toBe(target)
  })

  it.prop("the slowest branch is one whose median no other branch's exceeds", [FastCheck.dictionary(FastCheck.string({ minLength: 1, maxLength: 4 }), durations, { minKeys: 1, maxKeys: 4 })], ([record]) => {
    const branches = new Map(Object.entries(record))
    const slowest = slowestBranch(branches)!
    expect(branches.has(slowest)).toBe(true)
    for (const samples of branches.values()) expect(medianOf(samples)).toBeLessThanOrEqual(medianOf(branches.get(slowest)!))
  })

  it("no branch measured yet has no slowest", () => {
    expect(slowestBranch(new Map())).toBeUndefined()
    expect(slowestBranch(new Map([["new", []]]))).toBeUndefined()
  })

  it("no samples, no floor; a stalled database does not lift it past the cap", () => {
    expect(latencyFloor([], 0.5)).toBe(0)
    expect(latencyFloor([60_000], 0)).toBe(MAX_LATENCY_FLOOR_MS)
    expect(medianOf([])).toBe(0)
  })
})
