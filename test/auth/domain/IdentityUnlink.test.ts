import { describe, expect, it } from "@effect/vitest"
import { decideUnlink, emailAfterUnlink, type UnlinkCandidate } from "../../../src/auth/domain/IdentityUnlink.js"

const identity = (id: string, email: string | null, verified = false): UnlinkCandidate => ({
  id,
  email,
  identity_data: email === null ? {} : { email, email_verified: verified }
})

const EMAIL = identity("0f6d7e0a-1111-4c7e-9a55-000000000001", "ann@example.com", true)
const GITHUB = identity("0f6d7e0a-2222-4c7e-9a55-000000000002", "ann@github.example", true)
const PHONE = identity("0f6d7e0a-3333-4c7e-9a55-000000000003", null)

describe("decideUnlink", () => {
  it("the last identity is refused, whatever the id", () => {
    expect(decideUnlink([EMAIL], EMAIL.id)).toEqual({ _tag: "Refuse", reason: "single_identity_not_deletable" })
    expect(decideUnlink([EMAIL], GITHUB.id)).toEqual({ _tag: "Refuse", reason: "single_identity_not_deletable" })
    expect(decideUnlink([], EMAIL.id)).toEqual({ _tag: "Refuse", reason: "single_identity_not_deletable" })
  })

  it("an id that is not one of the user's is not found", () => {
    expect(decideUnlink([EMAIL, GITHUB], PHONE.id)).toEqual({ _tag: "Refuse", reason: "identity_not_found" })
  })

  it("one of the user's goes (the id in any case), the others remain in order", () => {
    expect(decideUnlink([EMAIL, GITHUB, PHONE], GITHUB.id.toUpperCase())).toEqual({
      _tag: "Unlink",
      identity: GITHUB,
      remaining: [EMAIL, PHONE]
    })
  })
})

describe("emailAfterUnlink", () => {
  it("keeps the address while a remaining identity has it, in any case", () => {
    expect(emailAfterUnlink("Ann@Example.com", [EMAIL, PHONE])).toBeUndefined()
  })

  it("moves to the first remaining identity's address that its provider verified", () => {
    expect(emailAfterUnlink("ann@example.com", [GITHUB])).toBe("ann@github.example")
    const unverified = identity("0f6d7e0a-4444-4c7e-9a55-000000000004", "ann@other.example")
    expect(emailAfterUnlink("ann@example.com", [PHONE, unverified, GITHUB])).toBe("ann@github.example")
  })

  it("never moves to an unverified address: the user keeps theirs", () => {
    const victims = identity("0f6d7e0a-4444-4c7e-9a55-000000000004", "victim@example.com")
    expect(emailAfterUnlink("attacker@example.com", [victims])).toBeUndefined()
    expect(emailAfterUnlink(null, [victims])).toBeUndefined()
  })

  it("keeps the address when no remaining identity has one", () => {
    expect(emailAfterUnlink("ann@example.com", [PHONE])).toBeUndefined()
  })

  it("a user without an address keeps none while an identity without one remains, as GoTrue", () => {
    expect(emailAfterUnlink(null, [PHONE, GITHUB])).toBeUndefined()
    expect(emailAfterUnlink(null, [GITHUB])).toBe("ann@github.example")
  })

  it("skips what is not an address", () => {
    expect(emailAfterUnlink("ann@example.com", [identity("0f6d7e0a-5555-4c7e-9a55-000000000005", "not an address"), GITHUB]))
      .toBe("ann@github.example")
  })
})
