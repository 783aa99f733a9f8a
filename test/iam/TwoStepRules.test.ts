import { describe, expect, it } from "@effect/vitest"
import { Duration, FastCheck, Option } from "effect"
import * as OTPAuth from "otpauth"
import { totpSecret } from "../../src/domain/Totp.js"
import {
  failuresAfterWrong, judgeCode, ticketDigest, ticketExhausted, ticketOf, ticketState
} from "../../src/iam/domain/TwoStepRules.js"

/** The code an independent implementation (otpauth, not otplib) gives for `secret` at `at`. */
const appCode = (secret: string, at: number): string =>
  new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 }).generate({ timestamp: at })

const limits = { maxFailures: 3, failureWindow: Duration.minutes(15) }
const noFailures = { count: 0, since: undefined }
const secretArb = FastCheck.uint8Array({ minLength: 20, maxLength: 20 }).map(totpSecret)
// From 2001 to 2100, to the millisecond.
const instant = FastCheck.integer({ min: 978_307_200_000, max: 4_102_444_800_000 })
const stepOf = (ms: number) => Math.floor(ms / 30_000)

describe("judgeCode", () => {
  it.prop("accepts the app's code at its time step, once: a last step at or after it makes it a replay", [secretArb, instant, FastCheck.integer({ min: -3, max: 3 })], ([secret, at, offset]) => {
    const now = new Date(at)
    const code = appCode(secret, at)
    const verdict = judgeCode({ secret, lastStep: Option.none(), failures: noFailures }, code, now, limits)
    expect(verdict).toStrictEqual({ _tag: "Accepted", step: stepOf(at) })
    const last = stepOf(at) + offset
    const again = judgeCode({ secret, lastStep: Option.some(last), failures: noFailures }, code, now, limits)
    expect(again._tag).toBe(last >= stepOf(at) ? "Wrong" : "Accepted")
  })

  it.prop("a locked factor compares no code: the right one is refused too, with the rest of the window to wait", [secretArb, instant, FastCheck.integer({ min: 0, max: 899_999 })], ([secret, at, elapsed]) => {
    const since = new Date(at - elapsed)
    const verdict = judgeCode({ secret, lastStep: Option.none(), failures: { count: 3, since } }, appCode(secret, at), new Date(at), limits)
    expect(verdict).toStrictEqual({ _tag: "Locked", retryAfterMs: 900_000 - elapsed })
    // Under the limit, or once the window has passed, the code is judged.
    expect(judgeCode({ secret, lastStep: Option.none(), failures: { count: 2, since } }, appCode(secret, at), new Date(at), limits)._tag).toBe("Accepted")
    expect(judgeCode({ secret, lastStep: Option.none(), failures: { count: 3, since: new Date(at - 900_000) } }, appCode(secret, at), new Date(at), limits)._tag)
      .toBe("Accepted")
  })

  it("a code of another secret, or not six digits, is wrong", () => {
    const at = Date.parse("2026-11-27T06:00:00Z")
    const secret = "OMHINWCD23VEXFFQPNEDGNUDRKTCTXLZ"
    for (const code of ["", "12345", "1234567", "abcdef"]) {
      expect(judgeCode({ secret, lastStep: Option.none(), failures: noFailures }, code, new Date(at), limits)._tag).toBe("Wrong")
    }
  })
})

describe("failuresAfterWrong", () => {
  it.prop("counts within the window of the first failure, and starts a new window after it", [instant, FastCheck.integer({ min: 0, max: 2_000_000 }), FastCheck.nat(50)], ([at, elapsed, count]) => {
    const since = new Date(at - elapsed)
    const next = failuresAfterWrong({ count, since }, limits.failureWindow, new Date(at))
    expect(next).toStrictEqual(elapsed < 900_000 ? { count: count + 1, since } : { count: 1, since: new Date(at) })
    expect(failuresAfterWrong(noFailures, limits.failureWindow, new Date(at))).toStrictEqual({ count: 1, since: new Date(at) })
  })
})

describe("tickets", () => {
  it.prop("usable up to and including their expiry instant, then expired; unknown when not stored", [instant, FastCheck.integer({ min: -600_000, max: 600_000 })], ([at, offset]) => {
    const ticket = { userId: 7, expiresAt: new Date(at), failures: 0 }
    expect(ticketState(ticket, new Date(at + offset))).toStrictEqual(offset > 0 ? { _tag: "Expired" } : { _tag: "Usable", userId: 7 })
    expect(ticketState(undefined, new Date(at))).toStrictEqual({ _tag: "Unknown" })
  })

  it.prop("a ticket is spent once its failures reach the attempts", [FastCheck.nat(20), FastCheck.integer({ min: 1, max: 20 })], ([failures, attempts]) => {
    expect(ticketExhausted(failures, attempts)).toBe(failures >= attempts)
  })

  it.prop("is base64url of its bytes, and stored only as a SHA-256 digest that differs from it", [FastCheck.uint8Array({ minLength: 32, maxLength: 32 })], ([bytes]) => {
    const ticket = ticketOf(bytes)
    expect(ticket).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(Buffer.from(ticket, "base64url")).toStrictEqual(Buffer.from(bytes))
    expect(ticketDigest(ticket)).toMatch(/^[0-9a-f]{64}$/)
    expect(ticketDigest(ticket)).not.toContain(ticket)
  })
})
