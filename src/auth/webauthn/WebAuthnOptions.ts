import type { RelyingParty } from "./RelyingParty.js"

/*
 * The options JSON a client passes to navigator.credentials, and the go-webauthn `SessionData` kept until the
 * response comes back, byte for byte as GoTrue v2.196 (go-webauthn v0.16.5) makes them: the key order of the Go
 * structs, Go's `omitempty` (an empty exclude or allow list is left out), and GoTrue's settings (no authenticator
 * selection or attestation preference for MFA; resident key required, user verification preferred and no
 * attestation for passkeys). @simplewebauthn's own option generators add keys GoTrue never sends (`extensions`,
 * `hints`) and draw their own challenges, so the JSON is built here and the challenge is always the caller's bytes,
 * drawn from SecureRandom.
 */

/** go-webauthn's `CredentialParametersDefault()`, in its order of preference: ES256/384/512, RS256/384/512, PS256/384/512, EdDSA. */
export const GOTRUE_ALGORITHMS: ReadonlyArray<number> = [-7, -35, -36, -257, -258, -259, -37, -38, -39, -8]

/** go-webauthn's default ceremony timeout, which every GoTrue option carries (user verification is never "discouraged"). */
export const CEREMONY_TIMEOUT_MS = 300_000

/** go-webauthn's `CreateChallenge` draws 32 bytes; it refuses fewer than 16. */
export const CHALLENGE_BYTES = 32

/** Go's zero `time.Time`: GoTrue never turns on go-webauthn's own timeout, so `expires` is always this. */
export const GO_ZERO_TIME = "0001-01-01T00:00:00Z"

/** The transports GoTrue lists on every credential an MFA registration excludes, whatever the credential said. */
const MFA_EXCLUDE_TRANSPORTS: ReadonlyArray<string> = ["usb", "nfc"]

export interface CredentialParameterJson {
  readonly type: "public-key"
  readonly alg: number
}

export interface CredentialDescriptorJson {
  readonly type: "public-key"
  /** base64url, no padding. */
  readonly id: string
  readonly transports?: ReadonlyArray<string>
}

export interface CreationOptionsJson {
  readonly rp: { readonly name: string; readonly id: string }
  readonly user: { readonly name: string; readonly displayName: string; readonly id: string }
  readonly challenge: string
  readonly pubKeyCredParams: ReadonlyArray<CredentialParameterJson>
  readonly timeout: number
  readonly excludeCredentials?: ReadonlyArray<CredentialDescriptorJson>
  readonly authenticatorSelection: { readonly residentKey?: "required"; readonly userVerification?: "preferred" }
  readonly attestation?: "none"
}

export interface RequestOptionsJson {
  readonly challenge: string
  readonly timeout: number
  readonly rpId: string
  readonly allowCredentials?: ReadonlyArray<CredentialDescriptorJson>
  readonly userVerification?: "preferred"
}

/**
 * go-webauthn's `SessionData` as JSON (`mfa_challenges.web_authn_session_data`,
 * `webauthn_challenges.session_data`). `challenge` is base64url without padding, as in the options; `user_id` and
 * `allowed_credentials` are []byte in Go, so standard base64 with padding (null for a discoverable login, which
 * has no user yet).
 */
export interface GoSessionData {
  readonly challenge: string
  readonly rpId: string
  readonly user_id: string | null
  readonly allowed_credentials?: ReadonlyArray<string>
  readonly expires: string
  readonly userVerification: "" | "preferred"
  readonly credParams?: ReadonlyArray<CredentialParameterJson>
}

/** What a ceremony's start hands back: the options for the client, and the session data to store until it answers. */
export interface Ceremony<Options> {
  readonly options: Options
  readonly session: GoSessionData
}

/** A credential already on record: its id, and for an MFA login, the transports it registered with. */
export interface KnownCredential {
  readonly id: Uint8Array
  readonly transports: ReadonlyArray<string>
}

const base64Url = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64url")
const base64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64")

/** GoTrue's WebAuthn user handle: the 36-character UUID text, not its 16 bytes (so `userHandle` decodes to the id). */
const userHandle = (userId: string): Uint8Array => Buffer.from(userId, "utf8")

const credentialParameters = (): ReadonlyArray<CredentialParameterJson> =>
  GOTRUE_ALGORITHMS.map((alg) => ({ type: "public-key", alg }))

const rpEntity = (rp: RelyingParty) => ({ name: rp.name, id: rp.id })

const registrationSession = (
  rp: RelyingParty,
  challenge: Uint8Array,
  userId: string,
  userVerification: GoSessionData["userVerification"]
): GoSessionData => ({
  challenge: base64Url(challenge),
  rpId: rp.id,
  user_id: base64(userHandle(userId)),
  expires: GO_ZERO_TIME,
  userVerification,
  credParams: credentialParameters()
})

/**
 * POST /factors/{id}/challenge for an unverified WebAuthn factor: registration, wrapped in `{publicKey}` (auth-js
 * unwraps it). `name` and `displayName` are the email, "" when the user has none. The user's verified WebAuthn
 * factors are excluded, each listed with transports usb and nfc.
 */
export const mfaRegistration = (input: {
  readonly rp: RelyingParty
  readonly userId: string
  readonly email: string | null
  readonly challenge: Uint8Array
  readonly exclude: ReadonlyArray<Uint8Array>
}): Ceremony<{ readonly publicKey: CreationOptionsJson }> => {
  const email = input.email ?? ""
  return {
    options: {
      publicKey: {
        rp: rpEntity(input.rp),
        user: { name: email, displayName: email, id: base64Url(userHandle(input.userId)) },
        challenge: base64Url(input.challenge),
        pubKeyCredParams: credentialParameters(),
        timeout: CEREMONY_TIMEOUT_MS,
        ...(input.exclude.length === 0 ? {} : {
          excludeCredentials: input.exclude.map((id) => ({
            type: "public-key" as const,
            id: base64Url(id),
            transports: MFA_EXCLUDE_TRANSPORTS
          }))
        }),
        authenticatorSelection: {}
      }
    },
    session: registrationSession(input.rp, input.challenge, input.userId, "")
  }
}

/**
 * POST /factors/{id}/challenge for a verified WebAuthn factor: login, wrapped in `{publicKey}`, allowing every
 * verified WebAuthn factor of the user with the transports each registered with. No `userVerification`: GoTrue's
 * MFA configuration leaves it empty.
 */
export const mfaLogin = (input: {
  readonly rp: RelyingParty
  readonly userId: string
  readonly challenge: Uint8Array
  readonly allow: ReadonlyArray<KnownCredential>
}): Ceremony<{ readonly publicKey: RequestOptionsJson }> => ({
  options: {
    publicKey: {
      challenge: base64Url(input.challenge),
      timeout: CEREMONY_TIMEOUT_MS,
      rpId: input.rp.id,
      ...(input.allow.length === 0 ? {} : {
        allowCredentials: input.allow.map((credential) => ({
          type: "public-key" as const,
          id: base64Url(credential.id),
          ...(credential.transports.length === 0 ? {} : { transports: credential.transports })
        }))
      })
    }
  },
  session: {
    challenge: base64Url(input.challenge),
    rpId: input.rp.id,
    user_id: base64(userHandle(input.userId)),
    ...(input.allow.length === 0 ? {} : { allowed_credentials: input.allow.map((credential) => base64(credential.id)) }),
    expires: GO_ZERO_TIME,
    userVerification: ""
  }
})

/** The user as a passkey registration names it. */
export interface PasskeyUser {
  readonly id: string
  readonly email: string | null
  readonly phone: string | null
  readonly userMetadata: Readonly<Record<string, unknown>> | null
}

/** GoTrue's passkey user entity: `name` is the email, else the phone; `displayName` is user_metadata.name, else `name`. */
export const passkeyUserEntity = (user: PasskeyUser): CreationOptionsJson["user"] => {
  const name = user.email !== null && user.email !== "" ? user.email : user.phone ?? ""
  const metadataName = user.userMetadata?.["name"]
  return {
    name,
    displayName: typeof metadataName === "string" && metadataName !== "" ? metadataName : name,
    id: base64Url(userHandle(user.id))
  }
}

/**
 * POST /passkeys/registration/options: bare options (no `{publicKey}` wrapper), a discoverable credential
 * required, the user's passkeys excluded by id alone.
 */
export const passkeyRegistration = (input: {
  readonly rp: RelyingParty
  readonly user: PasskeyUser
  readonly challenge: Uint8Array
  readonly exclude: ReadonlyArray<Uint8Array>
}): Ceremony<CreationOptionsJson> => ({
  options: {
    rp: rpEntity(input.rp),
    user: passkeyUserEntity(input.user),
    challenge: base64Url(input.challenge),
    pubKeyCredParams: credentialParameters(),
    timeout: CEREMONY_TIMEOUT_MS,
    ...(input.exclude.length === 0 ? {} : {
      excludeCredentials: input.exclude.map((id) => ({ type: "public-key" as const, id: base64Url(id) }))
    }),
    authenticatorSelection: { residentKey: "required", userVerification: "preferred" },
    attestation: "none"
  },
  session: registrationSession(input.rp, input.challenge, input.user.id, "preferred")
})

/** POST /passkeys/authentication/options: a discoverable login, so no user and no allowed credentials. */
export const passkeyAuthentication = (input: {
  readonly rp: RelyingParty
  readonly challenge: Uint8Array
}): Ceremony<RequestOptionsJson> => ({
  options: {
    challenge: base64Url(input.challenge),
    timeout: CEREMONY_TIMEOUT_MS,
    rpId: input.rp.id,
    userVerification: "preferred"
  },
  session: {
    challenge: base64Url(input.challenge),
    rpId: input.rp.id,
    user_id: null,
    expires: GO_ZERO_TIME,
    userVerification: "preferred"
  }
})

const BASE64URL = /^[A-Za-z0-9_-]+$/

/**
 * The challenge a stored session data was made for (a string or the driver's parsed JSON), or undefined when the
 * value is not go-webauthn session data: the response is then checked against nothing and must be refused.
 */
export const sessionChallenge = (stored: unknown): string | undefined => {
  let json: unknown = stored
  if (typeof stored === "string") {
    try {
      json = JSON.parse(stored)
    } catch {
      return undefined
    }
  }
  if (typeof json !== "object" || json === null) return undefined
  const challenge = (json as Record<string, unknown>)["challenge"]
  return typeof challenge === "string" && BASE64URL.test(challenge) ? challenge : undefined
}
