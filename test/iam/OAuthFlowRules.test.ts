import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import {
  finishVerdict, FLOW_SECRET_BYTES, flowSecretOf, flowState, linkVerdict, NOT_LINKED, NOT_THE_LINKER, stateDigest
} from "../../src/iam/domain/OAuthFlowRules.js"

// From 2001 to 2100, to the millisecond.
const instant = FastCheck.integer({ min: 978_307_200_000, max: 4_102_444_800_000 })
const local = FastCheck.stringMatching(/^[a-z0-9._+-]{1,20}$/)
const domain = FastCheck.stringMatching(/^[a-z0-9-]{1,20}\.[a-z]{2,6}$/)

describe("flowSecretOf", () => {
  it.prop("a state or verifier of 32 random bytes is 43 base64url characters (RFC 7636's shortest verifier)", [
    FastCheck.uint8Array({ minLength: FLOW_SECRET_BYTES, maxLength: FLOW_SECRET_BYTES })
  ], ([bytes]) => {
    const secret = flowSecretOf(bytes)
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(Buffer.from(secret, "base64url")).toStrictEqual(Buffer.from(bytes))
  })
})

describe("stateDigest", () => {
  it.prop("is SHA-256 hex, never the state itself, and tells states apart", [FastCheck.string(), FastCheck.string()], ([a, b]) => {
    expect(stateDigest(a)).toMatch(/^[0-9a-f]{64}$/)
    expect(stateDigest(a)).not.toBe(a)
    expect(stateDigest(a) === stateDigest(b)).toBe(a === b)
  })
})

describe("flowState", () => {
  it("an unknown state is Unknown", () => expect(flowState(undefined, new Date())._tag).toBe("Unknown"))

  it.prop("usable up to its expiry instant included, expired after; a link flow keeps its account", [
    instant,
    FastCheck.integer({ min: -600_000, max: 600_000 }),
    FastCheck.option(FastCheck.integer({ min: 1, max: 1_000_000 }), { nil: null })
  ], ([expires, offset, linkUserId]) => {
    const flow = { provider: "keycloak", codeVerifier: "v", expiresAt: new Date(expires), linkUserId }
    const state = flowState(flow, new Date(expires + offset))
    if (offset > 0) expect(state).toStrictEqual({ _tag: "Expired" })
    else expect(state).toStrictEqual({ _tag: "Usable", provider: "keycloak", codeVerifier: "v", linkUserId })
  })
})

describe("linkVerdict", () => {
  it.prop("a verified email links, lower-cased and trimmed as IAM stores emails", [local, domain], ([user, host]) => {
    const email = ` ${user.toUpperCase()}@${host.toUpperCase()} `
    expect(linkVerdict({ subject: "s", email, emailVerified: true })).toStrictEqual({ _tag: "Link", email: `${user}@${host}` })
  })

  it.prop("an unverified email never links, whatever it is", [local, domain], ([user, host]) => {
    expect(linkVerdict({ subject: "s", email: `${user}@${host}`, emailVerified: false })).toStrictEqual({ _tag: "Unverified" })
  })

  it.prop("no email, or something that is not an address, never links, verified or not", [
    FastCheck.option(FastCheck.stringMatching(/^[^@]*$/), { nil: null }),
    FastCheck.boolean()
  ], ([email, emailVerified]) => {
    expect(linkVerdict({ subject: "s", email, emailVerified })).toStrictEqual({ _tag: "NoEmail" })
  })
})

describe("finishVerdict", () => {
  const userId = FastCheck.integer({ min: 1, max: 1_000_000 })
  const identity = FastCheck.record({
    subject: FastCheck.string({ maxLength: 30 }),
    email: FastCheck.option(FastCheck.oneof(FastCheck.tuple(local, domain).map(([u, h]) => `${u}@${h}`), FastCheck.string()), { nil: null }),
    emailVerified: FastCheck.boolean()
  })
  const held = FastCheck.option(userId, { nil: undefined })

  it.prop("a sign-in flow signs in only the account that linked the subject, whatever email comes with it", [identity, held], ([who, linkedUserId]) => {
    const verdict = finishVerdict({ linkUserId: null, identity: who, linkedUserId, linkAccountEmail: undefined, finisherUserId: null })
    if (who.subject === "") expect(verdict).toStrictEqual({ _tag: "Refused", reason: "the provider gave no subject" })
    else if (linkedUserId === undefined) expect(verdict).toStrictEqual({ _tag: "Refused", reason: NOT_LINKED })
    else expect(verdict).toStrictEqual({ _tag: "SignIn", userId: linkedUserId })
  })

  it.prop("a link links only for its starter, with the account's email verified, and never an identity another holds", [
    identity, userId, held, FastCheck.option(userId, { nil: null }), FastCheck.boolean()
  ], ([who, linkUserId, linkedUserId, finisher, sameEmail]) => {
    const accountEmail = sameEmail && who.email !== null ? who.email.trim().toUpperCase() : "someone@else.example"
    const verdict = finishVerdict({ linkUserId, identity: who, linkedUserId, linkAccountEmail: accountEmail, finisherUserId: finisher })
    const vouched = linkVerdict(who)
    const links = who.subject !== "" && finisher === linkUserId && vouched._tag === "Link" && vouched.email === accountEmail.toLowerCase()
    if (!links) expect(verdict._tag).toBe("Refused")
    else if (linkedUserId !== undefined && linkedUserId !== linkUserId) expect(verdict).toStrictEqual({ _tag: "Taken" })
    else expect(verdict).toStrictEqual({ _tag: "Link", userId: linkUserId })
    if (who.subject !== "" && finisher !== linkUserId) expect(verdict).toStrictEqual({ _tag: "Refused", reason: NOT_THE_LINKER })
  })

  it.prop("no verdict ever names an account other than the flow's or the identity's holder", [
    identity, FastCheck.option(userId, { nil: null }), held, FastCheck.option(userId, { nil: null })
  ], ([who, linkUserId, linkedUserId, finisher]) => {
    const verdict = finishVerdict({ linkUserId, identity: who, linkedUserId, linkAccountEmail: who.email ?? undefined, finisherUserId: finisher })
    if (verdict._tag === "SignIn") expect(verdict.userId).toBe(linkedUserId)
    if (verdict._tag === "Link") expect(verdict.userId).toBe(linkUserId)
  })
})
