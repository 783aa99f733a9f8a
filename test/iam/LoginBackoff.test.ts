import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import {
  admitLogin, backoffMs, type FailureCount, isForgotten, type LoginAdmission, type LoginBackoff
} from "../../src/iam/domain/LoginBackoff.js"

const backoff: fc.Arbitrary<LoginBackoff> = fc.record({
  after: fc.integer({ min: 1, max: 10 }),
  firstMs: fc.integer({ min: 1, max: 5_000 }),
  maxMs: fc.integer({ min: 5_000, max: 3_600_000 }),
  forgetAfterMs: fc.integer({ min: 1, max: 86_400_000 })
})
const start = fc.integer({ min: 0, max: 4_102_444_800_000 })
const gaps = fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 10_000 })), { maxLength: 80 })

/** One account's attempts at `times`, every one of them failing, as the repo keeps the record between them. */
const failAll = (b: LoginBackoff, times: ReadonlyArray<number>): ReadonlyArray<LoginAdmission> => {
  let count: FailureCount | undefined
  return times.map((now) => {
    const admission = admitLogin(count, now, b)
    if (admission.allowed) count = admission.count
    return admission
  })
}
const timesFrom = (first: number, deltas: ReadonlyArray<number>) => {
  let now = first
  return deltas.map((delta) => (now += delta))
}

describe("backoffMs", () => {
  it("the defaults: five failures free, then 1 s, 2 s, 4 s … up to 15 minutes", () => {
    const defaults: LoginBackoff = { after: 5, firstMs: 1_000, maxMs: 900_000, forgetAfterMs: 86_400_000 }
    expect([1, 2, 3, 4, 5, 6, 7, 8, 14, 15, 16, 1_000, 1e9].map((n) => backoffMs(n, defaults)))
      .toEqual([0, 0, 0, 0, 1_000, 2_000, 4_000, 8_000, 512_000, 900_000, 900_000, 900_000, 900_000])
  })

  it.prop("nothing below the threshold; from it on the first wait, doubled by each failure, never above the cap",
    [backoff, fc.integer({ min: 0, max: 10_000 })], ([b, failures]) => {
      const wait = backoffMs(failures, b)
      if (failures < b.after) expect(wait).toBe(0)
      else expect(wait).toBe(Math.min(b.maxMs, b.firstMs * 2 ** Math.min(failures - b.after, 40)))
      expect(wait).toBeLessThanOrEqual(b.maxMs)
      expect(Number.isInteger(wait)).toBe(true)
      expect(backoffMs(failures + 1, b)).toBeGreaterThanOrEqual(wait)
    })
})

describe("admitLogin", () => {
  it.prop("guesses sent at one instant: exactly the free ones go through, then the first wait", [backoff, start], ([b, now]) => {
    const admissions = failAll(b, Array.from({ length: b.after + 5 }, () => now))
    expect(admissions.filter((a) => a.allowed)).toHaveLength(b.after)
    expect(admissions[b.after]).toEqual({ allowed: false, retryAfterMs: b.firstMs })
  })

  it.prop("a refusal's wait is exact, and changes nothing: waited out, an attempt goes ahead; a millisecond early, it does not",
    [backoff, start, gaps], ([b, first, deltas]) => {
      let count: FailureCount | undefined
      for (const now of timesFrom(first, deltas)) {
        const admission = admitLogin(count, now, b)
        if (admission.allowed) {
          count = admission.count
          continue
        }
        expect(admission.retryAfterMs).toBeGreaterThanOrEqual(1)
        expect(admitLogin(count, now + admission.retryAfterMs - 1, b).allowed).toBe(false)
        expect(admitLogin(count, now + admission.retryAfterMs, b).allowed).toBe(true)
      }
    })

  it.prop("backoff, not lockout: however many failures, the wait is never longer than the cap", [backoff, start, gaps], ([b, first, deltas]) => {
    for (const admission of failAll(b, timesFrom(first, deltas))) {
      if (!admission.allowed) expect(admission.retryAfterMs).toBeLessThanOrEqual(b.maxMs)
    }
  })

  it.prop("an attacker who waits out every backoff still gets one guess per wait, and the waits double", [backoff, start], ([b, first]) => {
    let count: FailureCount | undefined
    let now = first
    const waits: Array<number> = []
    for (let i = 0; i < b.after + 12; i++) {
      const admission = admitLogin(count, now, b)
      if (!admission.allowed) {
        waits.push(admission.retryAfterMs)
        now += admission.retryAfterMs
        continue
      }
      count = admission.count
    }
    waits.forEach((wait, i) => expect(wait).toBe(Math.min(b.maxMs, b.firstMs * 2 ** i)))
  })

  it.prop("a record forgotten decides as no record at all, so sweeping it is invisible",
    [backoff, fc.record({ failures: fc.integer({ min: 1, max: 100 }), blockedUntilMs: start }), fc.nat(1_000_000_000)],
    ([b, count, extra]) => {
      const now = count.blockedUntilMs + b.forgetAfterMs + extra
      expect(isForgotten(count, now, b)).toBe(true)
      expect(admitLogin(count, now, b)).toEqual(admitLogin(undefined, now, b))
    })
})
