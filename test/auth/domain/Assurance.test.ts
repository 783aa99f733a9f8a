import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { aalOfClaims, highestAal, isSecondFactorMethod, METHOD_OF_FACTOR, needsAal2, withSsoProvider } from "../../../src/auth/domain/Assurance.js"

const FIRST_FACTORS = ["password", "otp", "magiclink", "email/signup", "recovery", "invite", "email_change", "oauth",
  "anonymous", "sso/saml", "web3", "passkey", "token_refresh"]
const SECOND_FACTORS = ["totp", "mfa/phone", "mfa/webauthn"]

const claims = fc.array(fc.record({
  method: fc.constantFrom(...FIRST_FACTORS, ...SECOND_FACTORS),
  timestamp: fc.integer({ min: 0, max: 2 ** 31 })
}), { maxLength: 6 })
const factors = fc.array(fc.record({ status: fc.constantFrom("verified" as const, "unverified" as const) }), { maxLength: 4 })
const sessionAal = fc.constantFrom("aal1", "aal2", "aal3", null, undefined)

describe("Assurance (GoTrue's aal rules)", () => {
  it("a token is aal2 exactly when one of its session's claims is a second factor", () => {
    fc.assert(fc.property(claims, (list) => {
      expect(aalOfClaims(list)).toBe(list.some((c) => SECOND_FACTORS.includes(c.method)) ? "aal2" : "aal1")
    }))
  })

  it("a passkey is a first factor: a passkey sign-in alone stays aal1", () => {
    expect(isSecondFactorMethod("passkey")).toBe(false)
    expect(aalOfClaims([{ method: "passkey" }, { method: "password" }])).toBe("aal1")
  })

  it("each factor type adds its own second-factor method", () => {
    expect(Object.values(METHOD_OF_FACTOR).sort()).toStrictEqual([...SECOND_FACTORS].sort())
    for (const method of Object.values(METHOD_OF_FACTOR)) expect(isSecondFactorMethod(method)).toBe(true)
  })

  it("the next level is aal2 once any factor is verified, whatever the unverified ones", () => {
    fc.assert(fc.property(factors, (list) => {
      expect(highestAal(list)).toBe(list.some((f) => f.status === "verified") ? "aal2" : "aal1")
    }))
  })

  it("a gated action needs a second factor only for a user with a verified factor on a session row below aal2", () => {
    fc.assert(fc.property(factors, sessionAal, (list, aal) => {
      const verified = list.some((f) => f.status === "verified")
      expect(needsAal2(list, aal)).toBe(verified && aal !== "aal2")
    }))
    // No session at all (a token without session_id) counts as below.
    expect(needsAal2([{ status: "verified" }], undefined)).toBe(true)
    expect(needsAal2([{ status: "unverified" }], undefined)).toBe(false)
  })

  it("an sso/saml claim names the provider of the user's one SSO identity, and nothing else changes", () => {
    const amr = [{ method: "sso/saml", timestamp: 2 }, { method: "totp", timestamp: 1 }]
    expect(withSsoProvider(amr, ["sso:p-1"])).toEqual([{ method: "sso/saml", timestamp: 2, provider: "p-1" }, { method: "totp", timestamp: 1 }])
    expect(withSsoProvider(amr, ["sso:p-1", "email"])).toBe(amr)
    expect(withSsoProvider(amr, ["email"])).toBe(amr)
    expect(withSsoProvider(amr, [])).toBe(amr)
  })
})
