import { describe, expect, it } from "@effect/vitest"
import { authenticatorName } from "../../../src/auth/webauthn/AuthenticatorNames.js"
import type { RelyingParty } from "../../../src/auth/webauthn/RelyingParty.js"
import {
  mfaLogin,
  mfaRegistration,
  passkeyAuthentication,
  passkeyRegistration,
  type PasskeyUser,
  sessionChallenge
} from "../../../src/auth/webauthn/WebAuthnOptions.js"

// Expected JSON is written out as text in GoTrue's (go-webauthn v0.16.5's) key order, so a reordered or extra key
// fails the comparison of JSON.stringify output, not only a deep equality.
const rp: RelyingParty = { id: "example.com", name: "Example", origins: ["https://example.com"] }
const userId = "8d4c6f7e-1a2b-4c3d-8e9f-0123456789ab"
// base64url of the 36 characters of the UUID text (not of its 16 bytes), as GoTrue's user handle.
const userHandle = "OGQ0YzZmN2UtMWEyYi00YzNkLThlOWYtMDEyMzQ1Njc4OWFi"
// session data's user_id is Go []byte, standard base64: for UUID text it coincides with base64url (36 bytes need no
// padding, and hex digits and "-" never make the sextets 62 or 63); allowed_credentials below tells the two apart.
const userHandleStd = Buffer.from(userId).toString("base64")
const challenge = Uint8Array.from({ length: 32 }, (_, i) => 250 - i)
const challengeB64Url = Buffer.from(challenge).toString("base64url")
const credentialA = Uint8Array.from([0xfb, 0xff, 0x01, 0x02])
const credentialB = Uint8Array.from([0x10, 0x20, 0x30])

const params =
  `[{"type":"public-key","alg":-7},{"type":"public-key","alg":-35},{"type":"public-key","alg":-36},` +
  `{"type":"public-key","alg":-257},{"type":"public-key","alg":-258},{"type":"public-key","alg":-259},` +
  `{"type":"public-key","alg":-37},{"type":"public-key","alg":-38},{"type":"public-key","alg":-39},` +
  `{"type":"public-key","alg":-8}]`

describe("MFA WebAuthn options (Ref §1.12)", () => {
  it("registration: {publicKey} with rp, user = email, the ten algorithms, excludes with usb/nfc, empty selection", () => {
    const { options, session } = mfaRegistration({ rp, userId, email: "ann@example.com", challenge, exclude: [credentialA, credentialB] })
    expect(userHandle).toBe(Buffer.from(userId).toString("base64url"))
    expect(challengeB64Url).toContain("_") // a challenge whose base64url differs from base64, so the encoding is tested
    expect(JSON.stringify(options)).toBe(
      `{"publicKey":{"rp":{"name":"Example","id":"example.com"},` +
        `"user":{"name":"ann@example.com","displayName":"ann@example.com","id":"${userHandle}"},` +
        `"challenge":"${challengeB64Url}","pubKeyCredParams":${params},"timeout":300000,` +
        `"excludeCredentials":[{"type":"public-key","id":"-_8BAg","transports":["usb","nfc"]},` +
        `{"type":"public-key","id":"ECAw","transports":["usb","nfc"]}],` +
        `"authenticatorSelection":{}}}`
    )
    expect(JSON.stringify(session)).toBe(
      `{"challenge":"${challengeB64Url}","rpId":"example.com","user_id":"${userHandleStd}",` +
        `"expires":"0001-01-01T00:00:00Z","userVerification":"","credParams":${params}}`
    )
  })

  it("registration without a verified WebAuthn factor leaves excludeCredentials out (Go omitempty); no email is \"\"", () => {
    const { options } = mfaRegistration({ rp, userId, email: null, challenge, exclude: [] })
    expect(Object.keys(options.publicKey)).toEqual(["rp", "user", "challenge", "pubKeyCredParams", "timeout", "authenticatorSelection"])
    expect(options.publicKey.user).toEqual({ name: "", displayName: "", id: userHandle })
  })

  it("login: {publicKey} with challenge, timeout, rpId, allowCredentials with the stored transports, no userVerification", () => {
    const { options, session } = mfaLogin({
      rp,
      userId,
      challenge,
      allow: [{ id: credentialA, transports: ["internal", "hybrid"] }, { id: credentialB, transports: [] }]
    })
    expect(JSON.stringify(options)).toBe(
      `{"publicKey":{"challenge":"${challengeB64Url}","timeout":300000,"rpId":"example.com",` +
        `"allowCredentials":[{"type":"public-key","id":"-_8BAg","transports":["internal","hybrid"]},` +
        `{"type":"public-key","id":"ECAw"}]}}`
    )
    // allowed_credentials are Go []byte: standard base64 with padding, "+/" not "-_".
    expect(JSON.stringify(session)).toBe(
      `{"challenge":"${challengeB64Url}","rpId":"example.com","user_id":"${userHandleStd}",` +
        `"allowed_credentials":["+/8BAg==","ECAw"],"expires":"0001-01-01T00:00:00Z","userVerification":""}`
    )
  })
})

describe("passkey options (Ref §2.3, §2.4)", () => {
  const user: PasskeyUser = { id: userId, email: "ann@example.com", phone: "15550001111", userMetadata: { name: "Ann A." } }

  it("registration: bare options, excludes by id only, resident key required, UV preferred, attestation none", () => {
    const { options, session } = passkeyRegistration({ rp, user, challenge, exclude: [credentialA] })
    expect(JSON.stringify(options)).toBe(
      `{"rp":{"name":"Example","id":"example.com"},` +
        `"user":{"name":"ann@example.com","displayName":"Ann A.","id":"${userHandle}"},` +
        `"challenge":"${challengeB64Url}","pubKeyCredParams":${params},"timeout":300000,` +
        `"excludeCredentials":[{"type":"public-key","id":"-_8BAg"}],` +
        `"authenticatorSelection":{"residentKey":"required","userVerification":"preferred"},"attestation":"none"}`
    )
    expect(JSON.stringify(session)).toBe(
      `{"challenge":"${challengeB64Url}","rpId":"example.com","user_id":"${userHandleStd}",` +
        `"expires":"0001-01-01T00:00:00Z","userVerification":"preferred","credParams":${params}}`
    )
  })

  it("the user entity: name is the email, else the phone; displayName is user_metadata.name, else the name", () => {
    const entity = (over: Partial<PasskeyUser>) =>
      passkeyRegistration({ rp, user: { ...user, ...over }, challenge, exclude: [] }).options.user
    expect(entity({})).toEqual({ name: "ann@example.com", displayName: "Ann A.", id: userHandle })
    expect(entity({ email: null, userMetadata: null })).toEqual({ name: "15550001111", displayName: "15550001111", id: userHandle })
    expect(entity({ email: "", userMetadata: { name: "" } })).toEqual({ name: "15550001111", displayName: "15550001111", id: userHandle })
    expect(entity({ userMetadata: { name: 42 } }).displayName).toBe("ann@example.com")
    expect(passkeyRegistration({ rp, user, challenge, exclude: [] }).options.excludeCredentials).toBeUndefined()
  })

  it("authentication: a discoverable login, bare, with no user and no allowed credentials", () => {
    const { options, session } = passkeyAuthentication({ rp, challenge })
    expect(JSON.stringify(options)).toBe(
      `{"challenge":"${challengeB64Url}","timeout":300000,"rpId":"example.com","userVerification":"preferred"}`
    )
    expect(JSON.stringify(session)).toBe(
      `{"challenge":"${challengeB64Url}","rpId":"example.com","user_id":null,` +
        `"expires":"0001-01-01T00:00:00Z","userVerification":"preferred"}`
    )
  })
})

describe("reading the stored session data", () => {
  it("gives back the challenge from the stored JSON, as text or as the driver's parsed value", () => {
    const { session } = passkeyAuthentication({ rp, challenge })
    expect(sessionChallenge(session)).toBe(challengeB64Url)
    expect(sessionChallenge(JSON.stringify(session))).toBe(challengeB64Url)
  })

  it("reads session data as GoTrue wrote it (go-webauthn's keys, extensions and all)", () => {
    const goTrue = `{"challenge":"3q2-7w","rpId":"localhost","user_id":"${userHandleStd}","allowed_credentials":["AQID"],` +
      `"expires":"0001-01-01T00:00:00Z","userVerification":"","extensions":{"appid":"x"},"mediation":"conditional"}`
    expect(sessionChallenge(goTrue)).toBe("3q2-7w")
  })

  it("gives nothing for what is not session data", () => {
    for (const stored of [null, "", "not json", "[]", `{"challenge":""}`, `{"challenge":42}`, `{"challenge":"a+b/"}`, { rpId: "x" }]) {
      expect(sessionChallenge(stored)).toBeUndefined()
    }
  })
})

describe("authenticator names (GoTrue's embedded passkey-authenticator-aaguids)", () => {
  it("names the common passkey providers as GoTrue's table does", () => {
    expect(authenticatorName("fbfc3007-154e-4ecc-8c0b-6e020557d7bd")).toBe("Apple Passwords")
    expect(authenticatorName("ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4")).toBe("Google Password Manager")
    expect(authenticatorName("ADCE0002-35BC-C60A-648B-0B25F1F05503")).toBe("Chrome on Mac")
    expect(authenticatorName("08987058-cadc-4b81-b6e1-30de50dcbe96")).toBe("Windows Hello")
    expect(authenticatorName("bada5566-a7aa-401f-bd96-45619a55120d")).toBe("1Password")
    expect(authenticatorName("d548826e-79b4-db40-a3d8-11116f7e8349")).toBe("Bitwarden")
    expect(authenticatorName("531126d6-e717-415c-9320-3d9aa6981239")).toBe("Dashlane")
  })

  it("falls back to \"Passkey\" for the zero AAGUID, an unknown one, none, and object keys", () => {
    for (const aaguid of ["00000000-0000-0000-0000-000000000000", "4e49442d-4155-5448-2d33-313431353932", null, undefined, "constructor", "__proto__"]) {
      expect(authenticatorName(aaguid)).toBe("Passkey")
    }
  })
})
