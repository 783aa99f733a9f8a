import { describe, expect, it } from "@effect/vitest"
import { FastCheck, Option } from "effect"
import * as OTPAuth from "otpauth"
import { TOTP_SECRET_BYTES, totpSecret, verifyTotp } from "../../src/domain/Totp.js"
import { gotrueFixtureMissing, gotrueManifest } from "../support/GoTrueFixture.js"

/** The code an independent implementation (otpauth, not otplib) gives for `secret` at `at`: what an app shows. */
const appCode = (secret: string, at: Date): string =>
  new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 }).generate({
    timestamp: at.getTime()
  })

const step = (at: Date): number => Math.floor(at.getTime() / 30_000)
const shifted = (at: Date, steps: number): Date => new Date(at.getTime() + steps * 30_000)

const secretBytes = FastCheck.uint8Array({ minLength: TOTP_SECRET_BYTES, maxLength: TOTP_SECRET_BYTES })
// From 2001 to 2100, to the millisecond: any place in a step.
const instant = FastCheck.integer({ min: 978_307_200_000, max: 4_102_444_800_000 }).map((ms) => new Date(ms))

describe("totpSecret", () => {
  it("is RFC 4648 base32 without padding (the RFC's test vectors)", () => {
    const vectors: ReadonlyArray<readonly [string, string]> = [
      ["", ""], ["f", "MY"], ["fo", "MZXQ"], ["foo", "MZXW6"], ["foob", "MZXW6YQ"], ["fooba", "MZXW6YTB"], ["foobar", "MZXW6YTBOI"]
    ]
    for (const [bytes, encoded] of vectors) expect(totpSecret(new TextEncoder().encode(bytes))).toBe(encoded)
  })

  it.prop("20 bytes are 32 characters that otpauth decodes back to the same bytes", [secretBytes], ([bytes]) => {
    const secret = totpSecret(bytes)
    expect(secret).toMatch(/^[A-Z2-7]{32}$/)
    expect(new Uint8Array(OTPAuth.Secret.fromBase32(secret).buffer)).toStrictEqual(bytes)
  })
})

describe("verifyTotp", () => {
  it.prop("accepts what an app shows for the step of now, the one before and the one after, and says which step", [
    secretBytes,
    instant,
    FastCheck.constantFrom(-1, 0, 1)
  ], ([bytes, now, delta]) => {
    const secret = totpSecret(bytes)
    expect(verifyTotp(secret, appCode(secret, shifted(now, delta)), now)).toStrictEqual(
      Option.some({ timeStep: step(now) + delta, delta })
    )
  })

  it.prop("refuses a code from two steps away or more", [
    secretBytes,
    instant,
    FastCheck.oneof(FastCheck.integer({ min: -100, max: -2 }), FastCheck.integer({ min: 2, max: 100 }))
  ], ([bytes, now, away]) => {
    const secret = totpSecret(bytes)
    const code = appCode(secret, shifted(now, away))
    // One in 10^6 a far step's code equals one of the window's: that is a match, not a flaw.
    FastCheck.pre(![-1, 0, 1].some((delta) => appCode(secret, shifted(now, delta)) === code))
    expect(verifyTotp(secret, code, now)).toStrictEqual(Option.none())
  })

  it.prop("refuses any six digits that are not one of the window's three codes", [
    secretBytes,
    instant,
    FastCheck.stringOf(FastCheck.constantFrom(..."0123456789"), { minLength: 6, maxLength: 6 })
  ], ([bytes, now, guess]) => {
    const secret = totpSecret(bytes)
    const window = [-1, 0, 1].map((delta) => appCode(secret, shifted(now, delta)))
    expect(Option.isSome(verifyTotp(secret, guess, now))).toBe(window.includes(guess))
  })

  it.skipIf(gotrueFixtureMissing !== undefined)("treats a code of another length, or with other characters, as simply wrong; trims white space as GoTrue does", () => {
    const secret = gotrueManifest.users.mfa_user.totp_secret
    const now = new Date()
    const code = appCode(secret, now)
    for (const wrong of ["", code.slice(0, 5), `${code}0`, `0${code}`, `${code.slice(0, 5)}x`, "１２３４５６", `${code.slice(0, 3)} ${code.slice(3)}`]) {
      expect(verifyTotp(secret, wrong, now), JSON.stringify(wrong)).toStrictEqual(Option.none())
    }
    expect(Option.isSome(verifyTotp(secret, ` ${code}\n`, now))).toBe(true)
  })

  it.skipIf(gotrueFixtureMissing !== undefined)("accepts the fixture's secrets as GoTrue stored them, and their lower-case spelling", () => {
    const now = new Date()
    for (const secret of [gotrueManifest.users.mfa_user.totp_secret, gotrueManifest.users.mfa_unverified.totp_secret]) {
      expect(verifyTotp(secret, appCode(secret, now), now)).toStrictEqual(Option.some({ timeStep: step(now), delta: 0 }))
      expect(Option.isSome(verifyTotp(secret.toLowerCase(), appCode(secret, now), now))).toBe(true)
    }
  })

  it("fails closed on a secret it cannot read: GoTrue's encrypted form, not base32, too short", () => {
    const now = new Date()
    const code = appCode("OMHINWCD23VEXFFQPNEDGNUDRKTCTXLZ", now)
    const encrypted = JSON.stringify({ key_id: "k1", alg: "aes-gcm-hkdf", data: "AAAA", nonce: "AAAAAAAAAAAAAAAA" })
    for (const unreadable of [encrypted, "not base32!", "", totpSecret(new Uint8Array(10))]) {
      expect(verifyTotp(unreadable, code, now), unreadable).toStrictEqual(Option.none())
    }
  })
})
