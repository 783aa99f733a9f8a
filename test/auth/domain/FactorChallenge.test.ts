import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, FastCheck, Option } from "effect"
import { challengeExpiresAt, isChallengeExpired, requireCode } from "../../../src/auth/domain/FactorChallenge.js"
import { verifyLockout } from "../../../src/domain/CodeLockout.js"
import { isTotpReplay } from "../../../src/domain/Totp.js"

const instant = FastCheck.integer({ min: 0, max: 4_000_000_000_000 }).map((ms) => new Date(ms))
const seconds = FastCheck.integer({ min: 300, max: 86_400 })

describe("a factor challenge's expiry", () => {
  it.prop("is good up to and at created_at + expiry, expired one millisecond later", [instant, seconds], ([created, s]) => {
    const expiry = Duration.seconds(s)
    const end = challengeExpiresAt(created, expiry)
    expect(end.getTime() - created.getTime()).toBe(s * 1000)
    expect(isChallengeExpired(created, expiry, created)).toBe(false)
    expect(isChallengeExpired(created, expiry, end)).toBe(false)
    expect(isChallengeExpired(created, expiry, new Date(end.getTime() + 1))).toBe(true)
  })
})

describe("the per-factor failure limit", () => {
  it.prop("refuses only at the limit and within the window, for exactly the window's rest", [
    FastCheck.integer({ min: 0, max: 20 }),
    FastCheck.integer({ min: 1, max: 20 }),
    instant,
    FastCheck.integer({ min: 1, max: 3_600 }),
    FastCheck.integer({ min: 0, max: 7_200_000 })
  ], ([count, max, since, windowSeconds, elapsed]) => {
    const window = Duration.seconds(windowSeconds)
    const now = new Date(since.getTime() + elapsed)
    const lockout = verifyLockout({ count, since }, max, window, now)
    const inWindow = elapsed < windowSeconds * 1000
    expect(Option.isSome(lockout)).toBe(count >= max && inWindow)
    if (Option.isSome(lockout)) expect(lockout.value).toBe(windowSeconds * 1000 - elapsed)
  })

  it("a factor with no failures is never refused", () => {
    expect(verifyLockout({ count: 0, since: undefined }, 1, Duration.minutes(5), new Date())).toStrictEqual(Option.none())
  })
})

describe("the TOTP replay guard", () => {
  it.prop("accepts only steps after the last accepted one", [FastCheck.option(FastCheck.nat()), FastCheck.nat()], ([last, step]) => {
    expect(isTotpReplay(Option.fromNullable(last), step)).toBe(last !== null && step <= last)
  })
})

describe("requireCode", () => {
  it.effect("an empty code is GoTrue's 400 validation_failed; any other passes", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(requireCode({ code: "" }))
      expect([error.status, error.code, error.message]).toStrictEqual([400, "validation_failed", "Code needs to be non-empty"])
      yield* requireCode({ code: "123456" })
    }))
})
