import { afterEach, describe, expect, it } from "@effect/vitest"
import {
  browserSupportsWebAuthn,
  createCredential,
  deserializeCredentialCreationOptions,
  deserializeCredentialRequestOptions,
  getCredential,
  mergeCredentialCreationOptions,
  mergeCredentialRequestOptions,
  serializeCredentialCreationResponse,
  serializeCredentialRequestResponse
} from "@supabase/auth-js/dist/main/lib/webauthn.js"
import { Effect } from "effect"
import type { RelyingParty } from "../../../src/auth/webauthn/RelyingParty.js"
import { mfaLogin, mfaRegistration, passkeyAuthentication, passkeyRegistration } from "../../../src/auth/webauthn/WebAuthnOptions.js"
import { verifyAuthentication, verifyRegistration } from "../../../src/auth/webauthn/WebAuthnVerifier.js"
import { SoftwareAuthenticator } from "../../support/SoftwareAuthenticator.js"

/*
 * The installed authenticator, driven by auth-js 2.109.0's own WebAuthn helpers in the order its MFA WebAuthn API
 * (lib/webauthn.js `_challenge`) and registerPasskey/signInWithPasskey call them: deserialize the server's options,
 * merge auth-js's defaults, navigator.credentials.create/get (checked `instanceof PublicKeyCredential`), serialize.
 * What comes out must then verify on the server side.
 */

const origin = "http://localhost:3000"
const rp: RelyingParty = { id: "localhost", name: "Gatehouse", origins: [origin] }
const userId = "5e7d1c3b-2a49-4f68-8d7e-6c5b4a392817"
const challenge = (n: number) => Uint8Array.from({ length: 32 }, (_, i) => (n + i * 13) % 256)

let installed: SoftwareAuthenticator | undefined
const install = (authenticator = new SoftwareAuthenticator()) => {
  authenticator.install(origin)
  installed = authenticator
  return authenticator
}
afterEach(() => installed?.uninstall())

// auth-js's declarations name DOM types this project's lib does not have; its functions are called as it calls them.
type Loose = any

describe("SoftwareAuthenticator installed for auth-js in Node", () => {
  it("passes auth-js's browserSupportsWebAuthn, and uninstall puts the globals back", () => {
    const before = { window: Object.getOwnPropertyDescriptor(globalThis, "window"), navigator: Object.getOwnPropertyDescriptor(globalThis, "navigator") }
    expect(browserSupportsWebAuthn()).toBe(false)
    const authenticator = install()
    expect(browserSupportsWebAuthn()).toBe(true)
    expect((globalThis as Loose).window.location.hostname).toBe("localhost")
    authenticator.uninstall()
    expect(browserSupportsWebAuthn()).toBe(false)
    expect(Object.getOwnPropertyDescriptor(globalThis, "window")).toEqual(before.window)
    expect(Object.getOwnPropertyDescriptor(globalThis, "navigator")).toEqual(before.navigator)
    expect("PublicKeyCredential" in globalThis).toBe(false)
  })

  it.effect("an MFA factor: create and get through auth-js give PublicKeyCredentials whose JSON verifies", () =>
    Effect.gen(function*() {
      install()
      const PublicKeyCredential = (globalThis as Loose).PublicKeyCredential
      const enroll = mfaRegistration({ rp, userId, email: "ann@example.com", challenge: challenge(1), exclude: [] })
      // A JSON round trip, as the options arrive over HTTP.
      const createOptions = JSON.parse(JSON.stringify(enroll.options)).publicKey
      const created = yield* Effect.promise(() =>
        createCredential({ publicKey: mergeCredentialCreationOptions(deserializeCredentialCreationOptions(createOptions)) } as Loose)
      )
      expect(created.error).toBeNull()
      expect(created.data).toBeInstanceOf(PublicKeyCredential)
      // Through JSON text, as auth-js posts it.
      const registrationJson = JSON.parse(JSON.stringify(serializeCredentialCreationResponse(created.data as Loose)))
      expect(Object.keys(registrationJson).sort()).toEqual(["clientExtensionResults", "id", "rawId", "response", "type"])
      expect(registrationJson.type).toBe("public-key")
      expect(registrationJson.rawId).toBe(registrationJson.id)
      expect(Object.keys(registrationJson.response)).toEqual(expect.arrayContaining(["clientDataJSON", "attestationObject", "transports"]))
      const registration = yield* verifyRegistration(rp, enroll.session.challenge, registrationJson)

      const login = mfaLogin({ rp, userId, challenge: challenge(2), allow: [{ id: registration.credentialId, transports: registration.transports }] })
      const requestOptions = JSON.parse(JSON.stringify(login.options)).publicKey
      const got = yield* Effect.promise(() =>
        getCredential({ publicKey: mergeCredentialRequestOptions(deserializeCredentialRequestOptions(requestOptions)) } as Loose)
      )
      expect(got.error).toBeNull()
      expect(got.data).toBeInstanceOf(PublicKeyCredential)
      const assertionJson = JSON.parse(JSON.stringify(serializeCredentialRequestResponse(got.data as Loose)))
      expect(Object.keys(assertionJson.response)).toEqual(expect.arrayContaining(["clientDataJSON", "authenticatorData", "signature", "userHandle"]))
      expect(Buffer.from(assertionJson.response.userHandle, "base64url").toString("utf8")).toBe(userId)
      const verified = yield* verifyAuthentication(rp, login.session.challenge, {
        id: registration.credentialId,
        publicKey: registration.publicKey,
        counter: registration.signCount,
        transports: registration.transports
      }, assertionJson)
      expect(verified.newCounter).toBeGreaterThan(registration.signCount)
    }))

  it.effect("a passkey: bare options in, a discoverable login out", () =>
    Effect.gen(function*() {
      install()
      const user = { id: userId, email: "ann@example.com", phone: null, userMetadata: { name: "Ann" } }
      const registering = passkeyRegistration({ rp, user, challenge: challenge(3), exclude: [] })
      const created = yield* Effect.promise(() =>
        createCredential({ publicKey: deserializeCredentialCreationOptions(JSON.parse(JSON.stringify(registering.options))) } as Loose)
      )
      const registration = yield* verifyRegistration(rp, registering.session.challenge, serializeCredentialCreationResponse(created.data as Loose))
      const signingIn = passkeyAuthentication({ rp, challenge: challenge(4) })
      const got = yield* Effect.promise(() =>
        getCredential({ publicKey: deserializeCredentialRequestOptions(JSON.parse(JSON.stringify(signingIn.options))) } as Loose)
      )
      const assertionJson = serializeCredentialRequestResponse(got.data as Loose) as Loose
      expect(Buffer.from(assertionJson.response.userHandle, "base64url").toString("utf8")).toBe(userId)
      yield* verifyAuthentication(rp, signingIn.session.challenge, {
        id: registration.credentialId,
        publicKey: registration.publicKey,
        counter: registration.signCount,
        transports: registration.transports
      }, assertionJson)
    }))

  it("a page on another site gets a SecurityError from create, as in a browser", async () => {
    install()
    const elsewhere = mfaRegistration({ rp: { ...rp, id: "example.com" }, userId, email: "", challenge: challenge(5), exclude: [] })
    const created = await createCredential({ publicKey: deserializeCredentialCreationOptions(JSON.parse(JSON.stringify(elsewhere.options)).publicKey) } as Loose)
    expect(created.data).toBeNull()
    expect(created.error).not.toBeNull()
  })
})

describe("SoftwareAuthenticator for raw HTTP tests", () => {
  it("answers both option shapes, {publicKey} and bare, with the same kind of response", () => {
    const authenticator = new SoftwareAuthenticator()
    const wrapped = authenticator.register(origin, mfaRegistration({ rp, userId, email: "a@b.c", challenge: challenge(6), exclude: [] }).options)
    const bare = authenticator.register(origin, passkeyRegistration({ rp, user: { id: userId, email: "a@b.c", phone: null, userMetadata: null }, challenge: challenge(7), exclude: [] }).options)
    for (const response of [wrapped, bare]) {
      expect(response.type).toBe("public-key")
      expect(typeof response.response.attestationObject).toBe("string")
    }
    expect(wrapped.id).not.toBe(bare.id)
  })

  it("keeps its credentials to itself: another instance has none to sign in with", () => {
    const first = new SoftwareAuthenticator()
    first.register(origin, passkeyRegistration({ rp, user: { id: userId, email: "a@b.c", phone: null, userMetadata: null }, challenge: challenge(8), exclude: [] }).options)
    const login = passkeyAuthentication({ rp, challenge: challenge(9) }).options
    expect(first.authenticate(origin, login).type).toBe("public-key")
    expect(() => new SoftwareAuthenticator().authenticate(origin, login)).toThrow()
  })
})
