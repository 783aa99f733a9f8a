import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import {
  FLOW_SECRET_BYTES, flowSecretOf, flowState, linkVerdict, stateDigest
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

  it.prop("usable up to its expiry instant included, expired after", [instant, FastCheck.integer({ min: -600_000, max: 600_000 })], ([expires, offset]) => {
    const flow = { provider: "keycloak", codeVerifier: "v", expiresAt: new Date(expires) }
    const state = flowState(flow, new Date(expires + offset))
    if (offset > 0) expect(state).toStrictEqual({ _tag: "Expired" })
    else expect(state).toStrictEqual({ _tag: "Usable", provider: "keycloak", codeVerifier: "v" })
  })
})

describe("linkVerdict", () => {
  it.prop("a verified email links, lower-cased and trimmed as IAM stores emails", [local, domain], ([user, host]) => {
    const email = ` ${user.toUpperCase()}@${host.toUpperCase()} `
    expect(linkVerdict({ email, emailVerified: true })).toStrictEqual({ _tag: "Link", email: `${user}@${host}` })
  })

  it.prop("an unverified email never links, whatever it is", [local, domain], ([user, host]) => {
    expect(linkVerdict({ email: `${user}@${host}`, emailVerified: false })).toStrictEqual({ _tag: "Unverified" })
  })

  it.prop("no email, or something that is not an address, never links, verified or not", [
    FastCheck.option(FastCheck.stringMatching(/^[^@]*$/), { nil: null }),
    FastCheck.boolean()
  ], ([email, emailVerified]) => {
    expect(linkVerdict({ email, emailVerified })).toStrictEqual({ _tag: "NoEmail" })
  })
})
