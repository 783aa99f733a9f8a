import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { authenticatorName } from "../../../src/auth/webauthn/AuthenticatorNames.js"
import { goCredentialJson, goCredentialOf, readGoCredential } from "../../../src/auth/webauthn/GoWebAuthnJson.js"
import type { RelyingParty } from "../../../src/auth/webauthn/RelyingParty.js"
import {
  mfaLogin,
  mfaRegistration,
  passkeyAuthentication,
  passkeyRegistration,
  sessionChallenge
} from "../../../src/auth/webauthn/WebAuthnOptions.js"
import { verifyRegistration } from "../../../src/auth/webauthn/WebAuthnVerifier.js"

/*
 * Captured from a real GoTrue v2.196.0 (built from the tag with /work/shared/tools/gotrue, its own PostgreSQL 15),
 * run with WEBAUTHN_RP_ID=localhost, RP_DISPLAY_NAME=Gatehouse, RP_ORIGINS=http://localhost:3000, MFA WebAuthn and
 * passkeys on, driven by nid-webauthn-emulator: HTTP bodies as GoTrue sent them (Go's key order), and the jsonb
 * columns as PostgreSQL prints them (jsonb keeps no key order). The ceremony: sign up; enroll a WebAuthn factor;
 * challenge (create) and verify it; challenge (request) it; enroll a second factor and challenge it (create, now
 * excluding the first); register a passkey; ask for registration options again (excluding it) and for
 * authentication options.
 */
const GOTRUE = {
  userId: `e92379c5-8ea9-44b5-b965-85838e20e134`,
  email: `u1795701677045@example.com`,
  mfaCreate: `{"id":"b4f6c79c-100a-4420-aaac-33640ed841dc","type":"webauthn","expires_at":1795701977,"webauthn":{"type":"create","credential_options":{"publicKey":{"rp":{"name":"Gatehouse","id":"localhost"},"user":{"name":"u1795701677045@example.com","displayName":"u1795701677045@example.com","id":"ZTkyMzc5YzUtOGVhOS00NGI1LWI5NjUtODU4MzhlMjBlMTM0"},"challenge":"sRxZMI2bKgkd6y_W9GD0URLbHoVRC_ncnh_sHXlcFPw","pubKeyCredParams":[{"type":"public-key","alg":-7},{"type":"public-key","alg":-35},{"type":"public-key","alg":-36},{"type":"public-key","alg":-257},{"type":"public-key","alg":-258},{"type":"public-key","alg":-259},{"type":"public-key","alg":-37},{"type":"public-key","alg":-38},{"type":"public-key","alg":-39},{"type":"public-key","alg":-8}],"timeout":300000,"authenticatorSelection":{}}}}}`,
  mfaCreateExcluding: `{"id":"0e560fd7-a2d3-4c77-a919-989ec65de309","type":"webauthn","expires_at":1795701977,"webauthn":{"type":"create","credential_options":{"publicKey":{"rp":{"name":"Gatehouse","id":"localhost"},"user":{"name":"u1795701677045@example.com","displayName":"u1795701677045@example.com","id":"ZTkyMzc5YzUtOGVhOS00NGI1LWI5NjUtODU4MzhlMjBlMTM0"},"challenge":"ehIj1w_sCmKCLpa-TmsNjA82UYDwlSDbXoGA6nfFHD8","pubKeyCredParams":[{"type":"public-key","alg":-7},{"type":"public-key","alg":-35},{"type":"public-key","alg":-36},{"type":"public-key","alg":-257},{"type":"public-key","alg":-258},{"type":"public-key","alg":-259},{"type":"public-key","alg":-37},{"type":"public-key","alg":-38},{"type":"public-key","alg":-39},{"type":"public-key","alg":-8}],"timeout":300000,"excludeCredentials":[{"type":"public-key","id":"fx7KqZpPh8DdSXX87TRZi3CYEZP9aqwil1_1SFHtR2Q","transports":["usb","nfc"]}],"authenticatorSelection":{}}}}}`,
  mfaRequest: `{"id":"bd376e3b-3e5e-4429-94ab-85608d13e8f8","type":"webauthn","expires_at":1795701977,"webauthn":{"type":"request","credential_options":{"publicKey":{"challenge":"AgVmLozzxBbezarP2EjUhMXmLCqERGKpmZi7vVS4kOI","timeout":300000,"rpId":"localhost","allowCredentials":[{"type":"public-key","id":"fx7KqZpPh8DdSXX87TRZi3CYEZP9aqwil1_1SFHtR2Q","transports":["usb"]}]}}}}`,
  passkeyRegistration: `{"challenge_id":"35ef3eb2-d4e9-4f35-a583-356968189f95","options":{"rp":{"name":"Gatehouse","id":"localhost"},"user":{"name":"u1795701677045@example.com","displayName":"u1795701677045@example.com","id":"ZTkyMzc5YzUtOGVhOS00NGI1LWI5NjUtODU4MzhlMjBlMTM0"},"challenge":"JP-CVtiVzQq_0mWHEWUcvGHBbwAXCB3gCdb6GWjl-58","pubKeyCredParams":[{"type":"public-key","alg":-7},{"type":"public-key","alg":-35},{"type":"public-key","alg":-36},{"type":"public-key","alg":-257},{"type":"public-key","alg":-258},{"type":"public-key","alg":-259},{"type":"public-key","alg":-37},{"type":"public-key","alg":-38},{"type":"public-key","alg":-39},{"type":"public-key","alg":-8}],"timeout":300000,"authenticatorSelection":{"residentKey":"required","userVerification":"preferred"},"attestation":"none"},"expires_at":1795701978}`,
  passkeyRegistrationExcluding: `{"challenge_id":"e9e230a3-8a7a-49c9-878a-9a3b39c749be","options":{"rp":{"name":"Gatehouse","id":"localhost"},"user":{"name":"u1795701677045@example.com","displayName":"u1795701677045@example.com","id":"ZTkyMzc5YzUtOGVhOS00NGI1LWI5NjUtODU4MzhlMjBlMTM0"},"challenge":"zHQjJ_qWUIuKGwxI4iFDGr4m0UQtGSz7vNg-1ALGlko","pubKeyCredParams":[{"type":"public-key","alg":-7},{"type":"public-key","alg":-35},{"type":"public-key","alg":-36},{"type":"public-key","alg":-257},{"type":"public-key","alg":-258},{"type":"public-key","alg":-259},{"type":"public-key","alg":-37},{"type":"public-key","alg":-38},{"type":"public-key","alg":-39},{"type":"public-key","alg":-8}],"timeout":300000,"excludeCredentials":[{"type":"public-key","id":"zw4GP4YteuMHPd802KRzzvDgJi7CNDB4vYAxIoIgHdo"}],"authenticatorSelection":{"residentKey":"required","userVerification":"preferred"},"attestation":"none"},"expires_at":1795701978}`,
  passkeyAuthentication: `{"challenge_id":"a3dd34ed-2da0-4b90-b6dd-2bfdefa3988b","options":{"challenge":"QAgtuCcIj8bGfvUuf4Ov-65Jg4kIESrYiZNxfAU3RvY","timeout":300000,"rpId":"localhost","userVerification":"preferred"},"expires_at":1795701978}`,
  mfaCreateSession: `{"rpId": "localhost", "expires": "0001-01-01T00:00:00Z", "user_id": "ZTkyMzc5YzUtOGVhOS00NGI1LWI5NjUtODU4MzhlMjBlMTM0", "challenge": "sRxZMI2bKgkd6y_W9GD0URLbHoVRC_ncnh_sHXlcFPw", "credParams": [{"alg": -7, "type": "public-key"}, {"alg": -35, "type": "public-key"}, {"alg": -36, "type": "public-key"}, {"alg": -257, "type": "public-key"}, {"alg": -258, "type": "public-key"}, {"alg": -259, "type": "public-key"}, {"alg": -37, "type": "public-key"}, {"alg": -38, "type": "public-key"}, {"alg": -39, "type": "public-key"}, {"alg": -8, "type": "public-key"}], "userVerification": ""}`,
  mfaRequestSession: `{"rpId": "localhost", "expires": "0001-01-01T00:00:00Z", "user_id": "ZTkyMzc5YzUtOGVhOS00NGI1LWI5NjUtODU4MzhlMjBlMTM0", "challenge": "AgVmLozzxBbezarP2EjUhMXmLCqERGKpmZi7vVS4kOI", "userVerification": "", "allowed_credentials": ["fx7KqZpPh8DdSXX87TRZi3CYEZP9aqwil1/1SFHtR2Q="]}`,
  passkeyRegistrationSession: `{"rpId": "localhost", "expires": "0001-01-01T00:00:00Z", "user_id": "ZTkyMzc5YzUtOGVhOS00NGI1LWI5NjUtODU4MzhlMjBlMTM0", "challenge": "JP-CVtiVzQq_0mWHEWUcvGHBbwAXCB3gCdb6GWjl-58", "credParams": [{"alg": -7, "type": "public-key"}, {"alg": -35, "type": "public-key"}, {"alg": -36, "type": "public-key"}, {"alg": -257, "type": "public-key"}, {"alg": -258, "type": "public-key"}, {"alg": -259, "type": "public-key"}, {"alg": -37, "type": "public-key"}, {"alg": -38, "type": "public-key"}, {"alg": -39, "type": "public-key"}, {"alg": -8, "type": "public-key"}], "userVerification": "preferred"}`,
  passkeyAuthenticationSession: `{"rpId": "localhost", "expires": "0001-01-01T00:00:00Z", "user_id": null, "challenge": "QAgtuCcIj8bGfvUuf4Ov-65Jg4kIESrYiZNxfAU3RvY", "userVerification": "preferred"}`,
  credential: `{"id": "fx7KqZpPh8DdSXX87TRZi3CYEZP9aqwil1/1SFHtR2Q=", "flags": {"backupState": true, "userPresent": true, "userVerified": true, "backupEligible": true}, "publicKey": "pQECAyYgASFYIOvR7HU9eyXtwd/Zul8O9sUIy8RfvoPcfzn/57r+6JTuIlggaVUMv0xdAfK/pLydtsKys/fPUElWd6Pd1WhOYrp07MI=", "transport": ["usb"], "attestation": {"object": "o2NmbXRkbm9uZWdhdHRTdG10oGhhdXRoRGF0YVikSZYN5YgOjGh0NBcPZHZgW4/krrmihjLHmVzzuoMdl2NdAAAAAE5JRC1BVVRILTMxNDE1OTIAIH8eyqmaT4fA3Ul1/O00WYtwmBGT/WqsIpdf9UhR7UdkpQECAyYgASFYIOvR7HU9eyXtwd/Zul8O9sUIy8RfvoPcfzn/57r+6JTuIlggaVUMv0xdAfK/pLydtsKys/fPUElWd6Pd1WhOYrp07MI=", "clientDataHash": "3CeZnRCagcPSJlyYOwKL4ys6ynTLLrYOM00GlxqOgMk=", "clientDataJSON": "eyJjaGFsbGVuZ2UiOiJzUnhaTUkyYktna2Q2eV9XOUdEMFVSTGJIb1ZSQ19uY25oX3NIWGxjRlB3Iiwib3JpZ2luIjoiaHR0cDovL2xvY2FsaG9zdDozMDAwIiwidHlwZSI6IndlYmF1dGhuLmNyZWF0ZSIsImNyb3NzT3JpZ2luIjpmYWxzZX0=", "authenticatorData": "SZYN5YgOjGh0NBcPZHZgW4/krrmihjLHmVzzuoMdl2NdAAAAAE5JRC1BVVRILTMxNDE1OTIAIH8eyqmaT4fA3Ul1/O00WYtwmBGT/WqsIpdf9UhR7UdkpQECAyYgASFYIOvR7HU9eyXtwd/Zul8O9sUIy8RfvoPcfzn/57r+6JTuIlggaVUMv0xdAfK/pLydtsKys/fPUElWd6Pd1WhOYrp07MI=", "publicKeyAlgorithm": -7}, "authenticator": {"AAGUID": "TklELUFVVEgtMzE0MTU5Mg==", "signCount": 0, "attachment": "", "cloneWarning": false}, "attestationType": "none"}`,
  credentialAaguid: `4e49442d-4155-5448-2d33-313431353932`,
  registrationResponse: `{"id":"fx7KqZpPh8DdSXX87TRZi3CYEZP9aqwil1_1SFHtR2Q","type":"public-key","rawId":"fx7KqZpPh8DdSXX87TRZi3CYEZP9aqwil1_1SFHtR2Q","response":{"publicKey":"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE69HsdT17Je3B39m6Xw72xQjLxF--g9x_Of_nuv7olO5pVQy_TF0B8r-kvJ22wrKz989QSVZ3o93VaE5iunTswg","transports":["usb"],"clientDataJSON":"eyJjaGFsbGVuZ2UiOiJzUnhaTUkyYktna2Q2eV9XOUdEMFVSTGJIb1ZSQ19uY25oX3NIWGxjRlB3Iiwib3JpZ2luIjoiaHR0cDovL2xvY2FsaG9zdDozMDAwIiwidHlwZSI6IndlYmF1dGhuLmNyZWF0ZSIsImNyb3NzT3JpZ2luIjpmYWxzZX0","attestationObject":"o2NmbXRkbm9uZWdhdHRTdG10oGhhdXRoRGF0YVikSZYN5YgOjGh0NBcPZHZgW4_krrmihjLHmVzzuoMdl2NdAAAAAE5JRC1BVVRILTMxNDE1OTIAIH8eyqmaT4fA3Ul1_O00WYtwmBGT_WqsIpdf9UhR7UdkpQECAyYgASFYIOvR7HU9eyXtwd_Zul8O9sUIy8RfvoPcfzn_57r-6JTuIlggaVUMv0xdAfK_pLydtsKys_fPUElWd6Pd1WhOYrp07MI","authenticatorData":"SZYN5YgOjGh0NBcPZHZgW4_krrmihjLHmVzzuoMdl2NdAAAAAE5JRC1BVVRILTMxNDE1OTIAIH8eyqmaT4fA3Ul1_O00WYtwmBGT_WqsIpdf9UhR7UdkpQECAyYgASFYIOvR7HU9eyXtwd_Zul8O9sUIy8RfvoPcfzn_57r-6JTuIlggaVUMv0xdAfK_pLydtsKys_fPUElWd6Pd1WhOYrp07MI","publicKeyAlgorithm":-7},"clientExtensionResults":{"credProps":{"rk":true}}}`,
  passkeyRow: `zw4GP4YteuMHPd802KRzzvDgJi7CNDB4vYAxIoIgHdo= | none | 4e49442d-4155-5448-2d33-313431353932 | 0 | ["usb"] | true | true | Passkey`
}


const rp: RelyingParty = { id: "localhost", name: "Gatehouse", origins: ["http://localhost:3000"] }
const bytesOf = (base64Url: string) => Uint8Array.from(Buffer.from(base64Url, "base64url"))
const body = (text: string) => JSON.parse(text) as Record<string, any>
/** A value as GoTrue's HTTP body has it: JSON.parse keeps key order, so this is the text GoTrue sent for it. */
const asSent = (value: unknown) => JSON.stringify(value)

describe("option JSON against a real GoTrue v2.196", () => {
  const firstCredential = bytesOf(body(GOTRUE.mfaRequest)["webauthn"].credential_options.publicKey.allowCredentials[0].id)

  it("MFA create, without and with an excluded credential: the same text", () => {
    for (const [text, exclude] of [[GOTRUE.mfaCreate, []], [GOTRUE.mfaCreateExcluding, [firstCredential]]] as const) {
      const sent = body(text)["webauthn"].credential_options
      const { options } = mfaRegistration({ rp, userId: GOTRUE.userId, email: GOTRUE.email, challenge: bytesOf(sent.publicKey.challenge), exclude })
      expect(asSent(options)).toBe(asSent(sent))
    }
  })

  it("MFA request: the same text", () => {
    const sent = body(GOTRUE.mfaRequest)["webauthn"].credential_options
    const { options } = mfaLogin({ rp, userId: GOTRUE.userId, challenge: bytesOf(sent.publicKey.challenge), allow: [{ id: firstCredential, transports: ["usb"] }] })
    expect(asSent(options)).toBe(asSent(sent))
  })

  it("passkey registration, without and with an excluded passkey, and passkey authentication: the same text", () => {
    const user = { id: GOTRUE.userId, email: GOTRUE.email, phone: "", userMetadata: {} }
    const passkeyId = Uint8Array.from(Buffer.from(GOTRUE.passkeyRow.split(" | ")[0]!, "base64"))
    for (const [text, exclude] of [[GOTRUE.passkeyRegistration, []], [GOTRUE.passkeyRegistrationExcluding, [passkeyId]]] as const) {
      const sent = body(text)["options"]
      const { options } = passkeyRegistration({ rp, user, challenge: bytesOf(sent.challenge), exclude })
      expect(asSent(options)).toBe(asSent(sent))
    }
    const sent = body(GOTRUE.passkeyAuthentication)["options"]
    expect(asSent(passkeyAuthentication({ rp, challenge: bytesOf(sent.challenge) }).options)).toBe(asSent(sent))
  })

  it("the session data GoTrue stored is the session data built here, and its challenge reads back", () => {
    const mfaCreate = body(GOTRUE.mfaCreate)["webauthn"].credential_options.publicKey
    const mfaRequest = body(GOTRUE.mfaRequest)["webauthn"].credential_options.publicKey
    const passkeyCreate = body(GOTRUE.passkeyRegistration)["options"]
    const passkeyGet = body(GOTRUE.passkeyAuthentication)["options"]
    const user = { id: GOTRUE.userId, email: GOTRUE.email, phone: "", userMetadata: {} }
    const cases = [
      [GOTRUE.mfaCreateSession, mfaRegistration({ rp, userId: GOTRUE.userId, email: GOTRUE.email, challenge: bytesOf(mfaCreate.challenge), exclude: [] }).session],
      [GOTRUE.mfaRequestSession, mfaLogin({ rp, userId: GOTRUE.userId, challenge: bytesOf(mfaRequest.challenge), allow: [{ id: firstCredential, transports: ["usb"] }] }).session],
      [GOTRUE.passkeyRegistrationSession, passkeyRegistration({ rp, user, challenge: bytesOf(passkeyCreate.challenge), exclude: [] }).session],
      [GOTRUE.passkeyAuthenticationSession, passkeyAuthentication({ rp, challenge: bytesOf(passkeyGet.challenge) }).session]
    ] as const
    for (const [stored, built] of cases) {
      expect(built).toStrictEqual(JSON.parse(stored))
      expect(sessionChallenge(stored)).toBe(built.challenge)
    }
  })
})

describe("the go-webauthn Credential GoTrue stored (mfa_factors.web_authn_credential)", () => {
  it.effect("the same registration verified here writes the same credential, and GoTrue's reads back as it", () =>
    Effect.gen(function*() {
      const challenge = body(GOTRUE.mfaCreate)["webauthn"].credential_options.publicKey.challenge as string
      const registration = yield* verifyRegistration(rp, challenge, JSON.parse(GOTRUE.registrationResponse))
      const mine = goCredentialOf(registration)
      expect(goCredentialJson(mine)).toStrictEqual(JSON.parse(GOTRUE.credential))
      expect(Either.getOrThrow(readGoCredential(GOTRUE.credential))).toEqual(mine)
      expect(registration.aaguid).toBe(GOTRUE.credentialAaguid)
    }))

  // The passkey was made by the same software authenticator as the factor, so its row must say what the verifier
  // reports of the factor's registration (all but the credential's own id and key).
  it.effect("a passkey row holds what the verifier reports: attestation format, AAGUID, count, transports, flags, name", () =>
    Effect.gen(function*() {
      const challenge = body(GOTRUE.mfaCreate)["webauthn"].credential_options.publicKey.challenge as string
      const registration = yield* verifyRegistration(rp, challenge, JSON.parse(GOTRUE.registrationResponse))
      const [, attestationType, aaguid, signCount, transports, eligible, backedUp, name] = GOTRUE.passkeyRow.split(" | ")
      expect([registration.attestationFormat, registration.aaguid, String(registration.signCount)]).toEqual([attestationType, aaguid, signCount])
      expect(registration.transports).toEqual(JSON.parse(transports!))
      expect([String(registration.flags.backupEligible), String(registration.flags.backupState)]).toEqual([eligible, backedUp])
      expect(authenticatorName(registration.aaguid)).toBe(name)
    }))
})
