import type { AuthenticationResponseJSON, RegistrationResponseJSON } from "@simplewebauthn/server"
import { createHash } from "node:crypto"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type { GoCredentialFlags } from "./GoWebAuthnJson.js"
import type { RelyingParty } from "./RelyingParty.js"
import { GOTRUE_ALGORITHMS } from "./WebAuthnOptions.js"
import { traced } from "../../platform/Traced.js"

/*
 * The one place a WebAuthn response is checked, for MFA factors and passkeys alike, with @simplewebauthn/server set
 * to what GoTrue's go-webauthn accepts: the RP's configured origins (exactly) and id, GoTrue's ten algorithms, user
 * presence required and user verification not (GoTrue asks for "preferred" at most). Only the two verify
 * functions of the library are used: options and challenges are made in WebAuthnOptions.
 */

/**
 * Why a response was refused. `malformed`: not a credential response at all (GoTrue's "Invalid credential
 * response" / "Invalid credential_response"); `rejected`: a well-formed response that does not verify (wrong
 * challenge, origin, RP, signature, a counter that did not move, another credential). `detail` is for the log,
 * not for the client.
 */
export class WebAuthnVerificationFailed extends Data.TaggedError("WebAuthnVerificationFailed")<{
  readonly kind: "malformed" | "rejected"
  readonly detail: string
}> {}

/** A registration that verified: what the credential record and go-webauthn's Credential JSON are made of. */
export interface VerifiedRegistration {
  readonly credentialId: Uint8Array
  /** The COSE_Key bytes, for `webauthn_credentials.public_key` and for later verification. */
  readonly publicKey: Uint8Array
  readonly signCount: number
  /** The AAGUID as a UUID ("00000000-0000-0000-0000-000000000000" when the authenticator gives none). */
  readonly aaguid: string
  readonly aaguidBytes: Uint8Array
  readonly transports: ReadonlyArray<string>
  /** "platform", "cross-platform" or "" (not said). */
  readonly attachment: string
  readonly flags: GoCredentialFlags
  /** The attestation statement format ("none", "packed", …): what go-webauthn v0.16 stores as `attestationType`. */
  readonly attestationFormat: string
  /** As the client reported it (0 when it did not), which is what go-webauthn keeps. */
  readonly publicKeyAlgorithm: number
  readonly clientDataJSON: Uint8Array
  readonly clientDataHash: Uint8Array
  /** The response's own `authenticatorData` field (empty when the client left it out). */
  readonly authenticatorData: Uint8Array
  readonly attestationObject: Uint8Array
}

/** A credential on record, as an assertion is checked against it. */
export interface StoredCredential {
  readonly id: Uint8Array
  /** COSE_Key bytes. */
  readonly publicKey: Uint8Array
  /** The last sign count seen; an assertion must move it forward unless both are zero. */
  readonly counter: number
  readonly transports: ReadonlyArray<string>
}

export interface VerifiedAuthentication {
  readonly credentialId: Uint8Array
  /** The sign count to store. */
  readonly newCounter: number
  readonly userVerified: boolean
  readonly backupState: boolean
}

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const BASE64URL = /^[A-Za-z0-9_-]*={0,2}$/

const isBase64Url = (value: unknown): value is string => typeof value === "string" && value !== "" && BASE64URL.test(value)

const bytesOf = (base64Url: string): Uint8Array<ArrayBuffer> => Uint8Array.from(Buffer.from(base64Url, "base64url"))

const malformed = (detail: string) => new WebAuthnVerificationFailed({ kind: "malformed", detail })
const rejected = (detail: string) => new WebAuthnVerificationFailed({ kind: "rejected", detail })

/** The fields every credential response has, and whose absence makes it no credential response. */
const credentialShape = (json: unknown, fields: ReadonlyArray<string>): string | undefined => {
  if (!isRecord(json)) return "not an object"
  if (!isBase64Url(json["id"]) || !isBase64Url(json["rawId"])) return "id or rawId is not base64url"
  if (json["type"] !== "public-key") return "type is not public-key"
  const response = json["response"]
  if (!isRecord(response)) return "response is not an object"
  const missing = fields.find((field) => !isBase64Url(response[field]))
  if (missing !== undefined) return `response.${missing} is not base64url`
  try {
    if (!isRecord(JSON.parse(Buffer.from(response["clientDataJSON"] as string, "base64url").toString("utf8")))) {
      return "clientDataJSON is not a JSON object"
    }
  } catch {
    return "clientDataJSON is not JSON"
  }
  return undefined
}

/**
 * @simplewebauthn/server, imported on the first ceremony: it adds tens of megabytes to a process, and most servers
 * never see a passkey or a WebAuthn factor. (Node loads it once; later calls only resolve the cached module.)
 */
const library = Effect.promise(() =>
  Promise.all([import("@simplewebauthn/server"), import("@simplewebauthn/server/helpers")]).then(([server, helpers]) => ({
    ...helpers,
    verifyAuthenticationResponse: server.verifyAuthenticationResponse,
    verifyRegistrationResponse: server.verifyRegistrationResponse
  }))
)

const reason = (cause: unknown): string => (cause instanceof Error ? cause.message : "unverifiable")

/**
 * Verifies a registration (navigator.credentials.create's RegistrationResponseJSON) against the challenge the
 * session data was made for.
 */
export const verifyRegistration: (
  rp: RelyingParty,
  expectedChallenge: string,
  response: unknown
) => Effect.Effect<VerifiedRegistration, WebAuthnVerificationFailed> = traced("WebAuthnVerifier.verifyRegistration")(
  function*(rp: RelyingParty, expectedChallenge: string, response: unknown) {
    const problem = credentialShape(response, ["clientDataJSON", "attestationObject"])
    if (problem !== undefined) return yield* malformed(problem)
    const json = response as RegistrationResponseJSON
    const { decodeAttestationObject, parseAuthenticatorData, verifyRegistrationResponse } = yield* library
    const attestationObject = bytesOf(json.response.attestationObject)
    const decoded = yield* Effect.try({
      try: () => decodeAttestationObject(attestationObject),
      catch: () => malformed("attestationObject is not CBOR")
    })
    const result = yield* Effect.tryPromise({
      try: () =>
        verifyRegistrationResponse({
          response: json,
          expectedChallenge,
          expectedOrigin: [...rp.origins],
          expectedRPID: rp.id,
          requireUserVerification: false,
          supportedAlgorithmIDs: [...GOTRUE_ALGORITHMS]
        }),
      catch: (cause) => rejected(reason(cause))
    })
    if (!result.verified) return yield* rejected("registration not verified")
    const info = result.registrationInfo
    const { flags } = parseAuthenticatorData(decoded.get("authData"))
    const clientDataJSON = bytesOf(json.response.clientDataJSON)
    const authenticatorData = json.response.authenticatorData
    const algorithm = json.response.publicKeyAlgorithm
    const verified: VerifiedRegistration = {
      credentialId: bytesOf(info.credential.id),
      publicKey: info.credential.publicKey,
      signCount: info.credential.counter,
      aaguid: info.aaguid,
      aaguidBytes: Uint8Array.from(Buffer.from(info.aaguid.replaceAll("-", ""), "hex")),
      transports: info.credential.transports ?? [],
      attachment: json.authenticatorAttachment ?? "",
      flags: { userPresent: flags.up, userVerified: flags.uv, backupEligible: flags.be, backupState: flags.bs },
      attestationFormat: info.fmt,
      publicKeyAlgorithm: typeof algorithm === "number" && Number.isInteger(algorithm) ? algorithm : 0,
      clientDataJSON,
      clientDataHash: new Uint8Array(createHash("sha256").update(clientDataJSON).digest()),
      authenticatorData: isBase64Url(authenticatorData) ? bytesOf(authenticatorData) : new Uint8Array(0),
      attestationObject
    }
    return verified
  }
)

/**
 * Verifies an assertion (navigator.credentials.get's AuthenticationResponseJSON) made by `credential` against the
 * session's challenge. A replayed assertion fails twice over: its challenge was consumed with the session, and its
 * sign count no longer moves the stored one forward.
 */
export const verifyAuthentication: (
  rp: RelyingParty,
  expectedChallenge: string,
  credential: StoredCredential,
  response: unknown
) => Effect.Effect<VerifiedAuthentication, WebAuthnVerificationFailed> = traced("WebAuthnVerifier.verifyAuthentication")(
  function*(rp: RelyingParty, expectedChallenge: string, credential: StoredCredential, response: unknown) {
    const problem = credentialShape(response, ["clientDataJSON", "authenticatorData", "signature"])
    if (problem !== undefined) return yield* malformed(problem)
    const json = response as AuthenticationResponseJSON
    // simplewebauthn takes the credential's word for which key to use; a response for another credential must not
    // be checked against this one's key and counter.
    if (!Buffer.from(bytesOf(json.rawId)).equals(Buffer.from(credential.id))) {
      return yield* rejected("the response is for another credential")
    }
    const { verifyAuthenticationResponse } = yield* library
    const result = yield* Effect.tryPromise({
      try: () =>
        verifyAuthenticationResponse({
          response: json,
          expectedChallenge,
          expectedOrigin: [...rp.origins],
          expectedRPID: rp.id,
          requireUserVerification: false,
          credential: {
            id: Buffer.from(credential.id).toString("base64url"),
            publicKey: Uint8Array.from(credential.publicKey),
            counter: credential.counter,
            transports: [...credential.transports] as NonNullable<RegistrationResponseJSON["response"]["transports"]>
          }
        }),
      catch: (cause) => rejected(reason(cause))
    })
    if (!result.verified) return yield* rejected("assertion not verified")
    const verified: VerifiedAuthentication = {
      credentialId: Uint8Array.from(credential.id),
      newCounter: result.authenticationInfo.newCounter,
      userVerified: result.authenticationInfo.userVerified,
      backupState: result.authenticationInfo.credentialBackedUp
    }
    return verified
  }
)

/**
 * Refuses what is not an assertion at all (GoTrue's parse step: "Invalid credential response"), for a caller that
 * must tell it apart from a well-formed one before it looks up the user and credential the assertion names.
 */
export const checkAssertionShape = (response: unknown): Effect.Effect<void, WebAuthnVerificationFailed> => {
  const problem = credentialShape(response, ["clientDataJSON", "authenticatorData", "signature"])
  return problem === undefined ? Effect.void : Effect.fail(malformed(problem))
}

/** The credential id an assertion names (`rawId`), to find the credential it must be checked against. */
export const assertionCredentialId = (response: unknown): Uint8Array | undefined =>
  isRecord(response) && isBase64Url(response["rawId"]) ? bytesOf(response["rawId"]) : undefined

/**
 * The user handle of a discoverable login's assertion, as text: GoTrue's handles are the user's UUID text, so a
 * caller parses this as a UUID (GoTrue: "Invalid user handle in assertion" otherwise).
 */
export const assertionUserHandle = (response: unknown): string | undefined => {
  if (!isRecord(response) || !isRecord(response["response"])) return undefined
  const handle = response["response"]["userHandle"]
  return isBase64Url(handle) ? Buffer.from(handle, "base64url").toString("utf8") : undefined
}
