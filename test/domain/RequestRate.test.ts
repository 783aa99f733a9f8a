import { describe, expect, it } from "@effect/vitest"
import { Duration, FastCheck } from "effect"
import {
  type Admission,
  admitRequest,
  admitsAny,
  isRefilled,
  refundRequest,
  type RequestRate,
  requestRate
} from "../../src/domain/RequestRate.js"

// Rates as GoTrue's settings make them: a number of requests (fractions too) per period, in bursts.
const events = FastCheck.oneof(FastCheck.integer({ min: 1, max: 1000 }), FastCheck.double({ min: 0.01, max: 1000, noNaN: true }))
const period = FastCheck.integer({ min: 1_000, max: 24 * 3_600_000 }).map(Duration.millis)
const burst = FastCheck.integer({ min: 1, max: 60 })
const openRate = FastCheck.tuple(events, period, burst).map(([n, per, b]) => requestRate(n, per, b))
// Small rates too, so that sequences reach refusals and refills within a few hundred steps.
const busyRate = FastCheck.tuple(FastCheck.integer({ min: 1, max: 100 }), FastCheck.integer({ min: 1, max: 5 })).map(
  ([intervalMs, b]) => requestRate(1, Duration.millis(intervalMs), b)
)
const start = FastCheck.integer({ min: 0, max: 4_102_444_800_000 })
const gaps = FastCheck.array(FastCheck.oneof(FastCheck.constant(0), FastCheck.integer({ min: 0, max: 250 })), { maxLength: 300 })

/** Runs the rule over one client's requests at `times`, as the repo keeps the TAT between them. */
const run = (rate: RequestRate, times: ReadonlyArray<number>): ReadonlyArray<Admission> => {
  let tat: number | undefined
  return times.map((now) => {
    const admission = admitRequest(tat, now, rate)
    if (admission.allowed) tat = admission.tat
    return admission
  })
}

const timesFrom = (first: number, deltas: ReadonlyArray<number>): ReadonlyArray<number> => {
  let now = first
  return deltas.map((delta) => (now += delta))
}

/**
 * golang.org/x/time/rate's bucket, which tollbooth (GoTrue's limiter) uses: `burst` tokens, full at first,
 * refilled continuously at one token per interval, one token a request. Counted here in milliseconds of credit
 * (a token is one interval's worth), so the arithmetic is exact.
 */
const tokenBucket = (intervalMs: number, burstSize: number) => {
  const capacity = burstSize * intervalMs
  let credit = capacity
  let last: number | undefined
  return (now: number): boolean => {
    credit = Math.min(capacity, credit + (last === undefined ? 0 : now - last))
    last = now
    if (credit < intervalMs) return false
    credit -= intervalMs
    return true
  }
}

describe("requestRate", () => {
  it("GoTrue's defaults: 30 per 5 minutes is one every 10 s, bursts of 30; 150 per 5 minutes one every 2 s", () => {
    expect(requestRate(30, Duration.minutes(5), 30)).toStrictEqual({ intervalMs: 10_000, toleranceMs: 290_000 })
    expect(requestRate(150, Duration.minutes(5), 30)).toStrictEqual({ intervalMs: 2_000, toleranceMs: 58_000 })
    expect(requestRate(30, Duration.hours(1), 30)).toStrictEqual({ intervalMs: 120_000, toleranceMs: 3_480_000 })
  })

  it.prop("never refills faster than configured, and by less than a millisecond a request", [events, period, burst], ([n, per, b]) => {
    const rate = requestRate(n, per, b)
    const exact = Duration.toMillis(per) / n
    expect(Number.isInteger(rate.intervalMs)).toBe(true)
    expect(rate.intervalMs).toBeGreaterThanOrEqual(exact)
    expect(rate.intervalMs).toBeLessThan(Math.max(1, exact) + 1)
    expect(rate.toleranceMs).toBe((b - 1) * rate.intervalMs)
    expect(admitsAny(rate)).toBe(true)
  })

  it.prop("no events, or a burst under one request, lets nothing through, ever", [
    FastCheck.oneof(FastCheck.tuple(FastCheck.constant(0), burst), FastCheck.tuple(events, FastCheck.double({ min: 0, max: 0.999, noNaN: true }))),
    period,
    start,
    gaps
  ], ([[n, b], per, first, deltas]) => {
    const rate = requestRate(n, per, b)
    expect(admitsAny(rate)).toBe(false)
    expect(run(rate, timesFrom(first, deltas)).every((admission) => !admission.allowed)).toBe(true)
  })
})

describe("admitRequest", () => {
  it.prop("decides exactly as x/time/rate's token bucket over any one client's requests", [busyRate, start, gaps], ([rate, first, deltas]) => {
    const times = timesFrom(first, deltas)
    const bucket = tokenBucket(rate.intervalMs, rate.toleranceMs / rate.intervalMs + 1)
    expect(run(rate, times).map((admission) => admission.allowed)).toStrictEqual(times.map(bucket))
  })

  it.prop("a new client gets exactly its burst at one instant", [openRate, start], ([rate, now]) => {
    const burstSize = rate.toleranceMs / rate.intervalMs + 1
    const admitted = run(rate, Array.from({ length: burstSize + 3 }, () => now)).map((admission) => admission.allowed)
    expect(admitted).toStrictEqual([...Array.from({ length: burstSize }, () => true), false, false, false])
  })

  it.prop(
    "admits at most a burst plus one request an interval, whatever order the moments come in (clocks that disagree)",
    [busyRate, FastCheck.array(start.map((t) => t % 5_000), { maxLength: 300 })],
    ([rate, times]) => {
      const admitted = run(rate, times).filter((admission) => admission.allowed).length
      const span = times.length === 0 ? 0 : Math.max(...times) - Math.min(...times)
      expect(admitted).toBeLessThanOrEqual(rate.toleranceMs / rate.intervalMs + 1 + Math.floor(span / rate.intervalMs))
    }
  )

  it.prop("a refusal's wait is exact: waited out, a request passes; a millisecond early, it does not", [busyRate, start, gaps], ([rate, first, deltas]) => {
    let tat: number | undefined
    for (const now of timesFrom(first, deltas)) {
      const admission = admitRequest(tat, now, rate)
      if (admission.allowed) {
        tat = admission.tat
        continue
      }
      expect(admission.retryAfterMs).toBeGreaterThanOrEqual(1)
      expect(admission.retryAfterMs).toBeLessThanOrEqual(rate.intervalMs)
      expect(admitRequest(tat, now + admission.retryAfterMs - 1, rate).allowed).toBe(false)
      expect(admitRequest(tat, now + admission.retryAfterMs, rate).allowed).toBe(true)
    }
  })

  it.prop("a refusal changes nothing: the request after it is decided as if it had not come", [busyRate, start, gaps], ([rate, first, deltas]) => {
    const times = timesFrom(first, deltas)
    const decisions = run(rate, times)
    const admittedOnly = times.filter((_, i) => decisions[i]!.allowed)
    expect(run(rate, admittedOnly).every((admission) => admission.allowed)).toBe(true)
  })

  it.prop("a refilled TAT decides as no TAT at all, so sweeping it is invisible", [openRate, start, FastCheck.nat(10_000_000)], ([rate, now, age]) => {
    const tat = now - age
    expect(isRefilled(tat, now)).toBe(true)
    expect(admitRequest(tat, now, rate)).toStrictEqual(admitRequest(undefined, now, rate))
    expect(isRefilled(now + 1, now)).toBe(false)
  })
})

describe("refundRequest", () => {
  it.prop("an admitted request refunded at once leaves every later decision as if it had never come",
    [busyRate, start, gaps, FastCheck.nat(20)], ([rate, first, deltas, at]) => {
      const times = timesFrom(first, deltas)
      if (times.length === 0) return
      const index = at % times.length
      // Both runs see the same requests; in the second, the one at `index` is admitted and given back.
      let plain: number | undefined
      let refunded: number | undefined
      times.forEach((now, i) => {
        const a = admitRequest(plain, now, rate)
        if (i !== index && a.allowed) plain = a.tat
        const b = admitRequest(refunded, now, rate)
        if (b.allowed) refunded = i === index ? refundRequest(b.tat, rate) : b.tat
        if (i !== index) expect(b.allowed).toBe(a.allowed)
      })
    })
})
