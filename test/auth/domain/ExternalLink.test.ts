import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import {
  appMetadataAfterSignIn,
  decideLink,
  externalIdentityData,
  type LinkCandidate,
  type LinkInput,
  providersOf,
  settle
} from "../../../src/auth/domain/ExternalLink.js"

const candidate: FastCheck.Arbitrary<LinkCandidate> = FastCheck.record({
  userId: FastCheck.uuid(),
  confirmed: FastCheck.boolean(),
  banned: FastCheck.boolean()
})

const input: FastCheck.Arbitrary<LinkInput> = FastCheck.record({
  identityOwner: FastCheck.option(candidate, { nil: undefined }),
  emailOwner: FastCheck.option(candidate, { nil: undefined }),
  emailTaken: FastCheck.boolean(),
  email: FastCheck.option(FastCheck.emailAddress().map((e) => e.toLowerCase()), { nil: undefined }),
  emailVerified: FastCheck.boolean(),
  signupDisabled: FastCheck.boolean()
}).map((i) => ({ ...i, emailTaken: i.emailTaken || i.emailOwner !== undefined }))

describe("decideLink", () => {
  it.prop("never links on an unverified or missing email", [input], ([i]) => {
    const decision = decideLink(i)
    if (!i.emailVerified || i.email === undefined) expect(decision._tag).not.toBe("Link")
  })

  it.prop("links only to the user holding the email, and reclaims only an unconfirmed one", [input], ([i]) => {
    const decision = decideLink(i)
    if (decision._tag === "Link") {
      expect(decision.userId).toBe(i.emailOwner!.userId)
      expect(decision.reclaim).toBe(!i.emailOwner!.confirmed)
      expect(i.identityOwner).toBeUndefined()
    }
  })

  it.prop("a known identity is its owner's sign-in, whatever the email says, unless the owner is banned", [input], ([i]) => {
    if (i.identityOwner === undefined) return
    expect(decideLink(i)).toEqual(
      i.identityOwner.banned ? { _tag: "Refuse", reason: "user_banned" } : { _tag: "Existing", userId: i.identityOwner.userId }
    )
  })

  it.prop("a new user never takes an address someone holds, and is confirmed only by a verified email", [input], ([i]) => {
    const decision = decideLink(i)
    if (decision._tag !== "Create") return
    if (i.emailTaken) expect(decision.email).toBeNull()
    expect(decision.confirmed).toBe(decision.email !== null && i.emailVerified)
    expect(i.signupDisabled).toBe(false)
  })

  it.prop("never signs into a banned user", [input], ([i]) => {
    const decision = decideLink(i)
    const target = decision._tag === "Existing" ? i.identityOwner : decision._tag === "Link" ? i.emailOwner : undefined
    expect(target?.banned ?? false).toBe(false)
  })

  it("examples", () => {
    const owner = { userId: "u1", confirmed: true, banned: false }
    const base: LinkInput = {
      identityOwner: undefined,
      emailOwner: undefined,
      emailTaken: false,
      email: "a@example.com",
      emailVerified: true,
      signupDisabled: false
    }
    expect(decideLink(base)).toEqual({ _tag: "Create", email: "a@example.com", confirmed: true })
    expect(decideLink({ ...base, emailVerified: false })).toEqual({ _tag: "Create", email: "a@example.com", confirmed: false })
    expect(decideLink({ ...base, emailOwner: owner, emailTaken: true })).toEqual({ _tag: "Link", userId: "u1", reclaim: false })
    expect(decideLink({ ...base, emailOwner: owner, emailTaken: true, emailVerified: false }))
      .toEqual({ _tag: "Create", email: null, confirmed: false })
    expect(decideLink({ ...base, emailTaken: true })).toEqual({ _tag: "Create", email: null, confirmed: false })
    expect(decideLink({ ...base, signupDisabled: true })).toEqual({ _tag: "Refuse", reason: "signup_disabled" })
    expect(decideLink({ ...base, signupDisabled: true, emailOwner: owner, emailTaken: true }))
      .toEqual({ _tag: "Link", userId: "u1", reclaim: false })
  })
})

describe("settle", () => {
  it("a confirmed user signs in; an unconfirmed one needs a verified email", () => {
    expect(settle(true, false)).toBe("sign_in")
    expect(settle(true, true)).toBe("sign_in")
    expect(settle(false, true)).toBe("confirm")
    expect(settle(false, false)).toBe("needs_verification")
  })
})

describe("externalIdentityData", () => {
  it("GoTrue's claims: both name and avatar spellings, the verified flags always present, named fields win", () => {
    expect(externalIdentityData({
      providerId: "sub-1",
      email: " A@Example.com ",
      emailVerified: true,
      name: "Ada",
      avatarUrl: "https://img/a.png",
      claims: { iss: "https://accounts.google.com", sub: "spoofed", custom_claims: { hd: "example.com" } }
    })).toEqual({
      iss: "https://accounts.google.com",
      sub: "sub-1",
      provider_id: "sub-1",
      email: "a@example.com",
      name: "Ada",
      full_name: "Ada",
      avatar_url: "https://img/a.png",
      picture: "https://img/a.png",
      email_verified: true,
      phone_verified: false,
      custom_claims: { hd: "example.com" }
    })
    expect(externalIdentityData({ providerId: "s", emailVerified: true, claims: {} }))
      .toEqual({ sub: "s", provider_id: "s", email_verified: false, phone_verified: false })
  })

  it("app_metadata after a sign-in keeps the first provider and lists the identities' providers", () => {
    expect(appMetadataAfterSignIn(null, "sso:p", ["sso:p"])).toStrictEqual({ provider: "sso:p", providers: ["sso:p"] })
    expect(appMetadataAfterSignIn({ provider: "email", role: "x" }, "google", ["email", "google", "email"]))
      .toStrictEqual({ provider: "email", role: "x", providers: ["email", "google"] })
  })

  it("providersOf keeps each provider once, oldest first", () => {
    expect(providersOf(["email", "google", "email", "apple"])).toEqual(["email", "google", "apple"])
  })
})
