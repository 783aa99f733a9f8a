import * as Data from "effect/Data"
import * as Either from "effect/Either"
import type { VerifiedRegistration } from "./WebAuthnVerifier.js"

/*
 * go-webauthn's `webauthn.Credential` (v0.16.5, the version GoTrue v2.196 pins) as JSON: the shape GoTrue keeps in
 * `mfa_factors.web_authn_credential`. Gatehouse writes it the same way so a database can go back to GoTrue, and
 * reads what GoTrue wrote so a factor enrolled there keeps working here.
 *
 * Go's encoding/json writes a []byte as standard base64 with padding and a nil slice as null. Gatehouse writes null
 * where go-webauthn leaves a slice nil (no transports, no authenticatorData in the response) and reads null, "" or
 * a missing key as empty. Keys are in the Go struct's order, so a row Gatehouse writes looks like one GoTrue wrote.
 */

/** The credential's flags at registration (authenticator data bits UP, UV, BE, BS). */
export interface GoCredentialFlags {
  readonly userPresent: boolean
  readonly userVerified: boolean
  readonly backupEligible: boolean
  readonly backupState: boolean
}

/** The raw registration data go-webauthn keeps so the credential can be re-checked against metadata later. */
export interface GoCredentialAttestation {
  readonly clientDataJSON: Uint8Array
  readonly clientDataHash: Uint8Array
  readonly authenticatorData: Uint8Array
  readonly publicKeyAlgorithm: number
  readonly object: Uint8Array
}

export interface GoCredential {
  readonly id: Uint8Array
  /** The COSE_Key, as the authenticator sent it: simplewebauthn verifies with exactly these bytes. */
  readonly publicKey: Uint8Array
  /** In go-webauthn v0.16 this holds the attestation *format* ("none", "packed", …) despite its name. */
  readonly attestationType: string
  readonly transport: ReadonlyArray<string>
  readonly flags: GoCredentialFlags
  readonly authenticator: {
    readonly aaguid: Uint8Array
    readonly signCount: number
    readonly cloneWarning: boolean
    /** "platform", "cross-platform" or "". */
    readonly attachment: string
  }
  readonly attestation: GoCredentialAttestation
}

/** The JSON text's shape, key for key. */
export interface GoCredentialJson {
  readonly id: string
  readonly publicKey: string
  readonly attestationType: string
  readonly transport: ReadonlyArray<string> | null
  readonly flags: GoCredentialFlags
  readonly authenticator: {
    readonly AAGUID: string | null
    readonly signCount: number
    readonly cloneWarning: boolean
    readonly attachment: string
  }
  readonly attestation: {
    readonly clientDataJSON: string | null
    readonly clientDataHash: string | null
    readonly authenticatorData: string | null
    readonly publicKeyAlgorithm: number
    readonly object: string | null
  }
}

/** A stored credential that is not go-webauthn's JSON (or not JSON at all): the factor cannot be used. */
export class UnreadableGoCredential extends Data.TaggedError("UnreadableGoCredential")<{ readonly reason: string }> {}

/** Go's []byte encoding: standard base64 with padding; nil (here: empty) is null. */
export const goBytes = (bytes: Uint8Array): string | null =>
  bytes.length === 0 ? null : Buffer.from(bytes).toString("base64")

const EMPTY = new Uint8Array(0)

const STD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** Go's []byte decoding: standard base64 with padding (Go refuses anything else, so do we); null is empty. */
export const fromGoBytes = (value: unknown): Uint8Array | undefined =>
  value === null || value === undefined ? EMPTY
  : typeof value === "string" && STD_BASE64.test(value) ? new Uint8Array(Buffer.from(value, "base64"))
  : undefined

/** The credential as GoTrue writes it into `mfa_factors.web_authn_credential`. */
export const goCredentialJson = (credential: GoCredential): GoCredentialJson => ({
  id: Buffer.from(credential.id).toString("base64"),
  publicKey: Buffer.from(credential.publicKey).toString("base64"),
  attestationType: credential.attestationType,
  transport: credential.transport.length === 0 ? null : [...credential.transport],
  flags: {
    userPresent: credential.flags.userPresent,
    userVerified: credential.flags.userVerified,
    backupEligible: credential.flags.backupEligible,
    backupState: credential.flags.backupState
  },
  authenticator: {
    AAGUID: goBytes(credential.authenticator.aaguid),
    signCount: credential.authenticator.signCount,
    cloneWarning: credential.authenticator.cloneWarning,
    attachment: credential.authenticator.attachment
  },
  attestation: {
    clientDataJSON: goBytes(credential.attestation.clientDataJSON),
    clientDataHash: goBytes(credential.attestation.clientDataHash),
    authenticatorData: goBytes(credential.attestation.authenticatorData),
    publicKeyAlgorithm: credential.attestation.publicKeyAlgorithm,
    object: goBytes(credential.attestation.object)
  }
})

/** What go-webauthn's `NewCredential` makes of a registration that verified. */
export const goCredentialOf = (registration: VerifiedRegistration): GoCredential => ({
  id: registration.credentialId,
  publicKey: registration.publicKey,
  attestationType: registration.attestationFormat,
  transport: registration.transports,
  flags: registration.flags,
  authenticator: {
    aaguid: registration.aaguidBytes,
    signCount: registration.signCount,
    cloneWarning: false,
    attachment: registration.attachment
  },
  attestation: {
    clientDataJSON: registration.clientDataJSON,
    clientDataHash: registration.clientDataHash,
    authenticatorData: registration.authenticatorData,
    publicKeyAlgorithm: registration.publicKeyAlgorithm,
    object: registration.attestationObject
  }
})

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * A stored credential back, from the column's JSON (a string, or the value the driver already parsed). `id` and
 * `publicKey` must be there, since without them nothing can be verified. Everything else may be missing: rows from
 * go-webauthn releases before `attestation` existed lack it, and keys added after v0.16 (`attestationFormat`,
 * `extensions`) are ignored.
 */
export const readGoCredential = (stored: unknown): Either.Either<GoCredential, UnreadableGoCredential> => {
  const fail = (reason: string) => Either.left(new UnreadableGoCredential({ reason }))
  let json: unknown = stored
  if (typeof stored === "string") {
    try {
      json = JSON.parse(stored)
    } catch {
      return fail("not JSON")
    }
  }
  if (!isRecord(json)) return fail("not an object")
  const flags = isRecord(json["flags"]) ? json["flags"] : {}
  const authenticator = isRecord(json["authenticator"]) ? json["authenticator"] : {}
  const attestation = isRecord(json["attestation"]) ? json["attestation"] : {}
  const bytes: Record<string, Uint8Array> = {}
  for (const [name, value] of [
    ["id", json["id"]],
    ["publicKey", json["publicKey"]],
    ["authenticator.AAGUID", authenticator["AAGUID"]],
    ["attestation.clientDataJSON", attestation["clientDataJSON"]],
    ["attestation.clientDataHash", attestation["clientDataHash"]],
    ["attestation.authenticatorData", attestation["authenticatorData"]],
    ["attestation.object", attestation["object"]]
  ] as const) {
    const decoded = fromGoBytes(value)
    if (decoded === undefined) return fail(`${name} is not standard base64`)
    bytes[name] = decoded
  }
  if (bytes["id"]!.length === 0) return fail("id is missing")
  if (bytes["publicKey"]!.length === 0) return fail("publicKey is missing")
  const transport = json["transport"]
  if (transport !== null && transport !== undefined &&
    !(Array.isArray(transport) && transport.every((t) => typeof t === "string"))) {
    return fail("transport is not a list of strings")
  }
  const signCount = authenticator["signCount"] ?? 0
  if (typeof signCount !== "number" || !Number.isInteger(signCount) || signCount < 0) return fail("signCount is not a count")
  const algorithm = attestation["publicKeyAlgorithm"] ?? 0
  if (typeof algorithm !== "number" || !Number.isInteger(algorithm)) return fail("publicKeyAlgorithm is not an integer")
  const flag = (name: string) => flags[name] === true
  const text = (value: unknown) => (typeof value === "string" ? value : "")
  return Either.right({
    id: bytes["id"]!,
    publicKey: bytes["publicKey"]!,
    attestationType: text(json["attestationType"]),
    transport: (transport ?? []) as ReadonlyArray<string>,
    flags: {
      userPresent: flag("userPresent"),
      userVerified: flag("userVerified"),
      backupEligible: flag("backupEligible"),
      backupState: flag("backupState")
    },
    authenticator: {
      aaguid: bytes["authenticator.AAGUID"]!,
      signCount,
      cloneWarning: authenticator["cloneWarning"] === true,
      attachment: text(authenticator["attachment"])
    },
    attestation: {
      clientDataJSON: bytes["attestation.clientDataJSON"]!,
      clientDataHash: bytes["attestation.clientDataHash"]!,
      authenticatorData: bytes["attestation.authenticatorData"]!,
      publicKeyAlgorithm: algorithm,
      object: bytes["attestation.object"]!
    }
  })
}
