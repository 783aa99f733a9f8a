import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import { type GoCredential, goCredentialJson, readGoCredential } from "../../../src/auth/webauthn/GoWebAuthnJson.js"

const bytes = (...values: ReadonlyArray<number>) => Uint8Array.from(values)

// Byte values chosen so standard base64 and base64url differ ("+", "/") and padding is needed.
const credential: GoCredential = {
  id: bytes(0xfb, 0xff, 0xbf, 0x01),
  publicKey: bytes(0xa5, 0x01, 0x02, 0x03, 0x26),
  attestationType: "none",
  transport: ["internal", "hybrid"],
  flags: { userPresent: true, userVerified: true, backupEligible: true, backupState: false },
  authenticator: {
    aaguid: Uint8Array.from(Buffer.from("bada5566a7aa401fbd9645619a55120d", "hex")),
    signCount: 7,
    cloneWarning: false,
    attachment: "platform"
  },
  attestation: {
    clientDataJSON: Uint8Array.from(Buffer.from(`{"type":"webauthn.create"}`)),
    clientDataHash: bytes(0xff, 0xfe),
    authenticatorData: bytes(),
    publicKeyAlgorithm: -7,
    object: bytes(0xa3)
  }
}

// Written the way Go's encoding/json writes go-webauthn v0.16.5's webauthn.Credential: the struct's key order,
// []byte as standard base64 with padding, a nil slice as null.
const goText =
  `{"id":"+/+/AQ==","publicKey":"pQECAyY=","attestationType":"none","transport":["internal","hybrid"],` +
  `"flags":{"userPresent":true,"userVerified":true,"backupEligible":true,"backupState":false},` +
  `"authenticator":{"AAGUID":"utpVZqeqQB+9lkVhmlUSDQ==","signCount":7,"cloneWarning":false,"attachment":"platform"},` +
  `"attestation":{"clientDataJSON":"eyJ0eXBlIjoid2ViYXV0aG4uY3JlYXRlIn0=","clientDataHash":"//4=",` +
  `"authenticatorData":null,"publicKeyAlgorithm":-7,"object":"ow=="}}`

describe("go-webauthn Credential JSON (mfa_factors.web_authn_credential)", () => {
  it("is written key for key as GoTrue writes it", () => {
    expect(JSON.stringify(goCredentialJson(credential))).toBe(goText)
  })

  it("reads a row as GoTrue wrote it, as text or as the driver's parsed jsonb", () => {
    expect(Either.getOrThrow(readGoCredential(goText))).toEqual(credential)
    expect(Either.getOrThrow(readGoCredential(JSON.parse(goText)))).toEqual(credential)
  })

  it("writes no transports as null, and reads null, [] and a missing key as none", () => {
    const none = { ...credential, transport: [] }
    expect(goCredentialJson(none).transport).toBeNull()
    const parsed = JSON.parse(goText) as Record<string, unknown>
    for (const transport of [null, [], undefined]) {
      expect(Either.getOrThrow(readGoCredential({ ...parsed, transport })).transport).toEqual([])
    }
  })

  it("reads rows of older and newer go-webauthn: no attestation block; extra keys ignored", () => {
    const older = `{"id":"AQID","publicKey":"pQE=","attestationType":"","transport":null,` +
      `"flags":{"userPresent":true,"userVerified":false,"backupEligible":false,"backupState":false},` +
      `"authenticator":{"AAGUID":"AAAAAAAAAAAAAAAAAAAAAA==","signCount":0,"cloneWarning":false,"attachment":"cross-platform"}}`
    const read = Either.getOrThrow(readGoCredential(older))
    expect(read.id).toEqual(bytes(1, 2, 3))
    expect(read.authenticator.aaguid).toEqual(new Uint8Array(16))
    expect(read.authenticator.attachment).toBe("cross-platform")
    expect(read.attestation).toEqual({
      clientDataJSON: bytes(),
      clientDataHash: bytes(),
      authenticatorData: bytes(),
      publicKeyAlgorithm: 0,
      object: bytes()
    })
    const newer = { ...JSON.parse(goText), attestationFormat: "packed", extensions: { rk: true } }
    expect(Either.getOrThrow(readGoCredential(newer))).toEqual(credential)
  })

  it("refuses what no credential can be verified with", () => {
    const parsed = JSON.parse(goText) as Record<string, unknown>
    const refused: ReadonlyArray<[unknown, RegExp]> = [
      ["{", /not JSON/],
      ["[]", /not an object/],
      [null, /not an object/],
      [{ ...parsed, id: null }, /id is missing/],
      [{ ...parsed, publicKey: "" }, /publicKey is missing/],
      // base64url is not what Go wrote: Go would refuse it too.
      [{ ...parsed, id: "-_-_AQ" }, /id is not standard base64/],
      [{ ...parsed, publicKey: 5 }, /publicKey is not standard base64/],
      [{ ...parsed, transport: "usb" }, /transport/],
      [{ ...parsed, authenticator: { ...(parsed["authenticator"] as object), signCount: -1 } }, /signCount/]
    ]
    for (const [stored, reason] of refused) {
      const result = readGoCredential(stored)
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isLeft(result)) {
        expect(result.left._tag).toBe("UnreadableGoCredential")
        expect(result.left.reason).toMatch(reason)
      }
    }
  })

  it.prop("any credential survives write, JSON text and read", [
    FastCheck.record({
      id: FastCheck.uint8Array({ minLength: 1, maxLength: 64 }),
      publicKey: FastCheck.uint8Array({ minLength: 1, maxLength: 80 }),
      attestationType: FastCheck.constantFrom("none", "packed", "tpm", ""),
      transport: FastCheck.array(FastCheck.constantFrom("usb", "nfc", "ble", "internal", "hybrid"), { maxLength: 3 }),
      flags: FastCheck.record({
        userPresent: FastCheck.boolean(),
        userVerified: FastCheck.boolean(),
        backupEligible: FastCheck.boolean(),
        backupState: FastCheck.boolean()
      }),
      authenticator: FastCheck.record({
        aaguid: FastCheck.uint8Array({ minLength: 16, maxLength: 16 }),
        signCount: FastCheck.nat({ max: 2 ** 32 - 1 }),
        cloneWarning: FastCheck.boolean(),
        attachment: FastCheck.constantFrom("platform", "cross-platform", "")
      }),
      attestation: FastCheck.record({
        clientDataJSON: FastCheck.uint8Array({ maxLength: 40 }),
        clientDataHash: FastCheck.uint8Array({ maxLength: 32 }),
        authenticatorData: FastCheck.uint8Array({ maxLength: 40 }),
        publicKeyAlgorithm: FastCheck.constantFrom(0, -7, -8, -257, -35),
        object: FastCheck.uint8Array({ maxLength: 40 })
      })
    })
  ], ([generated]) => {
    expect(Either.getOrThrow(readGoCredential(JSON.stringify(goCredentialJson(generated))))).toEqual(generated)
  })
})
