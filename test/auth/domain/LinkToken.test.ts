import { describe, expect, it } from "@effect/vitest"
import { Duration, FastCheck } from "effect"
import {
  acceptsLegacyLink,
  isLiveLink,
  kindsOfType,
  legacyLinksPossible,
  LINK_TOKEN_BYTES,
  linkDigest,
  nextConfirmationClaim,
  spentByVerification,
  type TokenKind
} from "../../../src/auth/domain/LinkToken.js"
import { otpTokenHash } from "../../../src/auth/domain/OtpToken.js"
import { VERIFY_TYPES } from "../../../src/auth/domain/Verification.js"

const date = FastCheck.integer({ min: 0, max: 4_000_000_000_000 }).map((ms) => new Date(ms))

describe("linkDigest", () => {
  it.prop("is SHA-256 in hex: 64 characters, the same for the same token, different for another", [FastCheck.string(), FastCheck.string()], ([a, b]) => {
    expect(linkDigest(a)).toMatch(/^[0-9a-f]{64}$/)
    expect(linkDigest(a)).toBe(linkDigest(a))
    if (a !== b) expect(linkDigest(a)).not.toBe(linkDigest(b))
  })

  it("a link token is as long as GoTrue's hashes: 56 hex characters", () => {
    expect(LINK_TOKEN_BYTES * 2).toBe(otpTokenHash("a@example.com", "123456").length)
  })
})

describe("kindsOfType", () => {
  it("every verification type names the tokens GoTrue stores it in", () => {
    expect(Object.fromEntries(VERIFY_TYPES.map((type) => [type, kindsOfType(type)]))).toEqual({
      signup: ["confirmation"],
      invite: ["confirmation"],
      sms: ["confirmation"],
      recovery: ["recovery"],
      magiclink: ["recovery"],
      email: ["confirmation", "recovery"],
      email_change: ["email_change_new", "email_change_current"],
      phone_change: ["phone_change"]
    })
  })
})

describe("spentByVerification", () => {
  const typeAndUsed = FastCheck.constantFrom(...VERIFY_TYPES).chain((type) =>
    FastCheck.constantFrom(...kindsOfType(type)).map((used) => [type, used] as const)
  )

  it.prop("spends the token used, and only tokens a verification of that type could have named", [typeAndUsed, FastCheck.boolean()], ([[type, used], completed]) => {
    const spent = spentByVerification(type, used, completed)
    expect(spent).toContain(used)
    for (const kind of spent) expect(kindsOfType(type)).toContain(kind)
    expect(new Set(spent).size).toBe(spent.length)
  })

  it.prop("once the verification has done its work, every other pending token of that kind goes with it", [typeAndUsed], ([[type, used]]) => {
    expect([...spentByVerification(type, used, true)].sort()).toEqual([...kindsOfType(type)].sort())
  })

  it.prop("the first of two email-change confirmations spends only its own half", [FastCheck.constantFrom<TokenKind>("email_change_new", "email_change_current")], ([half]) => {
    expect(spentByVerification("email_change", half, false)).toEqual([half])
  })

  it("by kind: both halves of an applied email change, both emailed codes for an email code, the shared recovery token", () => {
    expect(spentByVerification("email_change", "email_change_new", true)).toEqual(["email_change_new", "email_change_current"])
    expect(spentByVerification("email", "confirmation", true)).toEqual(["confirmation", "recovery"])
    expect(spentByVerification("magiclink", "recovery", true)).toEqual(["recovery"])
    expect(spentByVerification("signup", "confirmation", true)).toEqual(["confirmation"])
    expect(spentByVerification("phone_change", "phone_change", true)).toEqual(["phone_change"])
  })
})

describe("isLiveLink", () => {
  it.prop("a link lives exactly while its token's column holds the code it was issued with", [FastCheck.string(), FastCheck.string()], ([stored, issuedWith]) => {
    expect(isLiveLink(stored, issuedWith)).toBe(stored !== "" && stored === issuedWith)
  })

  it("a spent or cleared token kills its link", () => {
    expect(isLiveLink(null, "")).toBe(false)
    expect(isLiveLink("", "")).toBe(false)
  })
})

describe("acceptsLegacyLink", () => {
  it.prop("never a token Gatehouse issued, whenever it was sent", [date, date], ([sentAt, since]) => {
    expect(acceptsLegacyLink({ sentAt, issuedByGatehouse: true, linkTokensSince: since })).toBe(false)
  })

  it.prop("GoTrue's token only when it was sent before link tokens began", [date, date], ([sentAt, since]) => {
    expect(acceptsLegacyLink({ sentAt, issuedByGatehouse: false, linkTokensSince: since })).toBe(sentAt.getTime() < since.getTime())
  })

  it("never a token that was not sent", () => {
    expect(acceptsLegacyLink({ sentAt: null, issuedByGatehouse: false, linkTokensSince: new Date(1) })).toBe(false)
  })
})

describe("legacyLinksPossible", () => {
  it.prop("only within the tokens' lifetime after link tokens began", [date, FastCheck.integer({ min: 0, max: 10 ** 9 }), FastCheck.integer({ min: -(10 ** 9), max: 10 ** 9 })], ([since, lifetimeMs, offsetMs]) => {
    const now = new Date(since.getTime() + offsetMs)
    expect(legacyLinksPossible(since, Duration.millis(lifetimeMs), now)).toBe(offsetMs <= lifetimeMs)
  })
})

describe("nextConfirmationClaim", () => {
  const repeated = FastCheck.option(FastCheck.record({ password: FastCheck.string(), data: FastCheck.dictionary(FastCheck.string(), FastCheck.integer()) }), { nil: undefined })
  const previous = FastCheck.option(FastCheck.record({ reclaim: FastCheck.boolean() }), { nil: undefined })

  it.prop("a repeated sign-up reclaims with its own password and data; anything else brings none", [previous, repeated], ([before, signup]) => {
    const claim = nextConfirmationClaim(before, signup)
    if (signup !== undefined) {
      expect(claim).toEqual({ reclaim: true, password: signup.password, data: signup.data })
    } else {
      expect(claim).toEqual({ reclaim: before?.reclaim ?? false, password: null, data: null })
    }
  })

  it("a first sign-up's confirmation activates what the account holds; a contested account stays contested", () => {
    expect(nextConfirmationClaim(undefined, undefined).reclaim).toBe(false)
    expect(nextConfirmationClaim({ reclaim: true }, undefined)).toEqual({ reclaim: true, password: null, data: null })
  })
})
