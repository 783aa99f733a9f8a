import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { authenticatorName } from "../../../src/auth/webauthn/AuthenticatorNames.js"
import { goCredentialJson, goCredentialOf, readGoCredential } from "../../../src/auth/webauthn/GoWebAuthnJson.js"
import type { RelyingParty } from "../../../src/auth/webauthn/RelyingParty.js"
import {
  assertionCredentialId,
  assertionUserHandle,
  type StoredCredential,
  type VerifiedRegistration,
  verifyAuthentication,
  verifyRegistration,
  WebAuthnVerificationFailed
} from "../../../src/auth/webauthn/WebAuthnVerifier.js"
import { mfaLogin, mfaRegistration, passkeyAuthentication, passkeyRegistration } from "../../../src/auth/webauthn/WebAuthnOptions.js"
import { SoftwareAuthenticator } from "../../support/SoftwareAuthenticator.js"

const origin = "http://localhost:5173"
const rp: RelyingParty = { id: "localhost", name: "Gatehouse", origins: ["https://app.example", origin] }
const userId = "0b6f8e2a-5c1d-4e3f-9a7b-6c5d4e3f2a1b"
const user = { id: userId, email: "ann@example.com", phone: null, userMetadata: null }
// Distinct challenges, as SecureRandom would hand out.
const challenge = (n: number) => Uint8Array.from({ length: 32 }, (_, i) => (n * 31 + i * 7) % 256)
const base64Url = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64url")

/** The tagged failure an effect ends with (a success or a defect fails the test). */
const failure = <A>(effect: Effect.Effect<A, WebAuthnVerificationFailed>) => Effect.flip(effect)

const stored = (registration: VerifiedRegistration): StoredCredential => ({
  id: registration.credentialId,
  publicKey: registration.publicKey,
  counter: registration.signCount,
  transports: registration.transports
})

/** A passkey registered with a fresh authenticator and verified, ready to sign in with. */
const registered = (authenticator = new SoftwareAuthenticator()) =>
  Effect.gen(function*() {
    const { options, session } = passkeyRegistration({ rp, user, challenge: challenge(1), exclude: [] })
    const response = authenticator.register(origin, options)
    const registration = yield* verifyRegistration(rp, session.challenge, response)
    return { authenticator, registration, response }
  })

const signIn = (authenticator: SoftwareAuthenticator, n: number) => {
  const { options, session } = passkeyAuthentication({ rp, challenge: challenge(n) })
  return { response: authenticator.authenticate(origin, options), expected: session.challenge }
}

const tampered = <A extends { readonly response: object }>(response: A, field: string): A => {
  const bytes = Buffer.from((response.response as Record<string, unknown>)[field] as string, "base64url")
  bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 0x01
  return { ...response, response: { ...response.response, [field]: bytes.toString("base64url") } }
}

describe("registration", () => {
  it.effect("an MFA factor's registration ({publicKey} options) verifies, and says what the credential is", () =>
    Effect.gen(function*() {
      const authenticator = new SoftwareAuthenticator()
      const { options, session } = mfaRegistration({ rp, userId, email: "ann@example.com", challenge: challenge(2), exclude: [] })
      const response = authenticator.register(origin, options)
      const registration = yield* verifyRegistration(rp, session.challenge, response)
      expect(base64Url(registration.credentialId)).toBe(response.rawId)
      // A COSE_Key: a CBOR map (major type 5), not SPKI DER.
      expect(registration.publicKey[0]! >> 5).toBe(5)
      expect(registration.signCount).toBe(0)
      // The emulator's AAGUID is the ASCII text "NID-AUTH-3141592": not a known provider.
      expect(registration.aaguid).toBe("4e49442d-4155-5448-2d33-313431353932")
      expect(Buffer.from(registration.aaguidBytes).toString("latin1")).toBe("NID-AUTH-3141592")
      expect(authenticatorName(registration.aaguid)).toBe("Passkey")
      expect(registration.transports).toEqual(["usb"])
      // The emulator presents itself as a synced passkey: backup eligible and backed up.
      expect(registration.flags).toEqual({ userPresent: true, userVerified: true, backupEligible: true, backupState: true })
      expect(registration.attestationFormat).toBe("none")
      expect(registration.publicKeyAlgorithm).toBe(-7)
      expect(Buffer.from(registration.clientDataJSON).toString("base64url")).toBe(response.response.clientDataJSON)
      expect(JSON.parse(Buffer.from(registration.clientDataJSON).toString("utf8"))).toMatchObject({ type: "webauthn.create", challenge: session.challenge, origin })
      expect(registration.clientDataHash).toHaveLength(32)
      expect(base64Url(registration.attestationObject)).toBe(response.response.attestationObject)
    }))

  it.effect("a passkey's registration (bare options) verifies, with the authenticator's AAGUID and the provider's name", () =>
    Effect.gen(function*() {
      const authenticator = new SoftwareAuthenticator({ aaguid: "bada5566-a7aa-401f-bd96-45619a55120d", transports: ["internal", "hybrid"] })
      const { registration } = yield* registered(authenticator)
      expect(registration.aaguid).toBe("bada5566-a7aa-401f-bd96-45619a55120d")
      expect(authenticatorName(registration.aaguid)).toBe("1Password")
      expect(registration.transports).toEqual(["internal", "hybrid"])
    }))

  it.effect("refuses another challenge, an origin not configured, another RP id, and a tampered attestation", () =>
    Effect.gen(function*() {
      const authenticator = new SoftwareAuthenticator()
      const { options, session } = passkeyRegistration({ rp, user, challenge: challenge(3), exclude: [] })
      const response = authenticator.register(origin, options)
      const wrongChallenge = yield* failure(verifyRegistration(rp, base64Url(challenge(4)), response))
      expect(wrongChallenge).toMatchObject({ _tag: "WebAuthnVerificationFailed", kind: "rejected" })
      const otherOrigin = yield* failure(verifyRegistration({ ...rp, origins: ["http://localhost:5174"] }, session.challenge, response))
      expect(otherOrigin).toMatchObject({ kind: "rejected" })
      const otherRp = yield* failure(verifyRegistration({ ...rp, id: "example.com" }, session.challenge, response))
      expect(otherRp).toMatchObject({ kind: "rejected" })
      // The same response, unchanged, does verify: the refusals above are each down to the one thing changed.
      yield* verifyRegistration(rp, session.challenge, response)
      const forged = tampered(response, "clientDataJSON")
      expect(forged.response.clientDataJSON).not.toBe(response.response.clientDataJSON)
      expect(yield* failure(verifyRegistration(rp, session.challenge, forged))).toBeInstanceOf(WebAuthnVerificationFailed)
    }))

  it.effect("calls what is no credential response malformed", () =>
    Effect.gen(function*() {
      const { response } = yield* registered()
      const cases: ReadonlyArray<unknown> = [
        null,
        "text",
        {},
        { ...response, type: "password" },
        { ...response, rawId: "not base64url!" },
        { ...response, response: { ...response.response, attestationObject: undefined } },
        { ...response, response: { ...response.response, clientDataJSON: Buffer.from("not json").toString("base64url") } },
        { ...response, response: { ...response.response, attestationObject: Buffer.from([0xff, 0x00]).toString("base64url") } }
      ]
      for (const json of cases) {
        expect(yield* failure(verifyRegistration(rp, "abc", json))).toMatchObject({ kind: "malformed" })
      }
    }))
})

describe("authentication", () => {
  it.effect("a passkey sign-in verifies and moves the counter forward; the handle is the user's UUID text", () =>
    Effect.gen(function*() {
      const { authenticator, registration } = yield* registered()
      const { response, expected } = signIn(authenticator, 10)
      expect(assertionUserHandle(response)).toBe(userId)
      expect(base64Url(assertionCredentialId(response)!)).toBe(base64Url(registration.credentialId))
      const first = yield* verifyAuthentication(rp, expected, stored(registration), response)
      expect(first.newCounter).toBeGreaterThan(registration.signCount)
      expect(base64Url(first.credentialId)).toBe(base64Url(registration.credentialId))
      const again = signIn(authenticator, 11)
      const second = yield* verifyAuthentication(rp, again.expected, { ...stored(registration), counter: first.newCounter }, again.response)
      expect(second.newCounter).toBeGreaterThan(first.newCounter)
    }))

  it.effect("an MFA login ({publicKey} options allowing the factor's credential) verifies", () =>
    Effect.gen(function*() {
      const authenticator = new SoftwareAuthenticator()
      const enrolled = mfaRegistration({ rp, userId, email: "ann@example.com", challenge: challenge(20), exclude: [] })
      const registration = yield* verifyRegistration(rp, enrolled.session.challenge, authenticator.register(origin, enrolled.options))
      const { options, session } = mfaLogin({ rp, userId, challenge: challenge(21), allow: [{ id: registration.credentialId, transports: registration.transports }] })
      const verified = yield* verifyAuthentication(rp, session.challenge, stored(registration), authenticator.authenticate(origin, options))
      expect(verified.newCounter).toBeGreaterThan(0)
    }))

  it.effect("refuses another challenge, an origin not configured, another RP id and a tampered signature", () =>
    Effect.gen(function*() {
      const { authenticator, registration } = yield* registered()
      const { response, expected } = signIn(authenticator, 30)
      const credential = stored(registration)
      expect(yield* failure(verifyAuthentication(rp, base64Url(challenge(31)), credential, response))).toMatchObject({ kind: "rejected" })
      expect(yield* failure(verifyAuthentication({ ...rp, origins: ["https://app.example"] }, expected, credential, response)))
        .toMatchObject({ kind: "rejected" })
      expect(yield* failure(verifyAuthentication({ ...rp, id: "example.com" }, expected, credential, response))).toMatchObject({ kind: "rejected" })
      expect(yield* failure(verifyAuthentication(rp, expected, credential, tampered(response, "signature")))).toMatchObject({ kind: "rejected" })
      expect(yield* failure(verifyAuthentication(rp, expected, credential, tampered(response, "authenticatorData")))).toMatchObject({ kind: "rejected" })
      // Untouched, the same response verifies: each refusal above is down to the one thing changed.
      yield* verifyAuthentication(rp, expected, credential, response)
    }))

  it.effect("refuses a replayed assertion: the stored counter has moved to the assertion's own", () =>
    Effect.gen(function*() {
      const { authenticator, registration } = yield* registered()
      const { response, expected } = signIn(authenticator, 40)
      const first = yield* verifyAuthentication(rp, expected, stored(registration), response)
      const replay = yield* failure(verifyAuthentication(rp, expected, { ...stored(registration), counter: first.newCounter }, response))
      expect(replay).toMatchObject({ _tag: "WebAuthnVerificationFailed", kind: "rejected" })
      expect(replay.detail).toMatch(/counter/i)
    }))

  it.effect("refuses an assertion made by another credential than the one it is checked against", () =>
    Effect.gen(function*() {
      const mine = yield* registered()
      const theirs = yield* registered()
      const { response, expected } = signIn(theirs.authenticator, 50)
      const refused = yield* failure(verifyAuthentication(rp, expected, stored(mine.registration), response))
      expect(refused).toMatchObject({ kind: "rejected" })
      yield* verifyAuthentication(rp, expected, stored(theirs.registration), response)
    }))

  it.effect("calls what is no assertion malformed, and reads no handle or id from it", () =>
    Effect.gen(function*() {
      const { authenticator, registration } = yield* registered()
      const { response } = signIn(authenticator, 60)
      for (const json of [{}, { ...response, response: { ...response.response, signature: 7 } }, [response]]) {
        expect(yield* failure(verifyAuthentication(rp, "abc", stored(registration), json))).toMatchObject({ kind: "malformed" })
      }
      for (const json of [{}, [response], { ...response, response: { ...response.response, userHandle: null } }]) {
        expect(assertionUserHandle(json)).toBeUndefined()
      }
      expect(assertionCredentialId({})).toBeUndefined()
      expect(assertionCredentialId({ rawId: "not base64url!" })).toBeUndefined()
    }))
})

describe("go-webauthn Credential JSON of a real registration", () => {
  it.effect("survives write, JSON text and read, and the credential read back still verifies a sign-in", () =>
    Effect.gen(function*() {
      const { authenticator, registration } = yield* registered()
      const credential = goCredentialOf(registration)
      const text = JSON.stringify(goCredentialJson(credential))
      const read = Either.getOrThrow(readGoCredential(text))
      expect(read).toEqual(credential)
      const { response, expected } = signIn(authenticator, 70)
      const verified = yield* verifyAuthentication(rp, expected, {
        id: read.id,
        publicKey: read.publicKey,
        counter: read.authenticator.signCount,
        transports: read.transport
      }, response)
      expect(verified.newCounter).toBeGreaterThan(read.authenticator.signCount)
    }))
})
