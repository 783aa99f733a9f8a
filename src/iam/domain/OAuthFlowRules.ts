import { createHash } from "node:crypto"

/**
 * The rules of IAM's OAuth2 sign-in (docs/iam.md, "OAuth2 sign-in"): what a started flow is named by, when it can
 * still be finished, and which provider identity may sign an account in. Pure: the service draws the randomness,
 * locks the row and asks these.
 */

/** Bytes of a flow's state and of its PKCE verifier: 256 bits each, unguessable. */
export const FLOW_SECRET_BYTES = 32

/**
 * The state (or PKCE verifier) as sent: base64url of random bytes. 32 bytes give 43 characters, the shortest
 * verifier RFC 7636 §4.1 allows, of its unreserved alphabet.
 */
export const flowSecretOf = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64url")

/**
 * What the table keeps of a state: its SHA-256, hex. The state travels in the browser's URL; a read of the table
 * alone must not be enough to finish someone's flow with a code of one's own.
 */
export const stateDigest = (state: string): string => createHash("sha256").update(state, "utf8").digest("hex")

/** A started flow as stored. */
export interface StoredFlow {
  readonly provider: string
  readonly codeVerifier: string | null
  readonly expiresAt: Date
}

export type FlowState =
  | { readonly _tag: "Unknown" }
  /** Past its expiry (the instant itself is still good). */
  | { readonly _tag: "Expired" }
  | { readonly _tag: "Usable"; readonly provider: string; readonly codeVerifier: string | null }

export const flowState = (flow: StoredFlow | undefined, now: Date): FlowState =>
  flow === undefined ? { _tag: "Unknown" }
  : now.getTime() > flow.expiresAt.getTime() ? { _tag: "Expired" }
  : { _tag: "Usable", provider: flow.provider, codeVerifier: flow.codeVerifier }

/** The identity a provider vouched for, as far as linking needs it. */
export interface ProviderIdentity {
  readonly email: string | null
  readonly emailVerified: boolean
}

export type LinkVerdict =
  /** Sign in the account registered with this email (lower-cased, as IAM stores emails), if there is one. */
  | { readonly _tag: "Link"; readonly email: string }
  | { readonly _tag: "NoEmail" }
  /**
   * The provider does not vouch for the address: anyone can put someone else's address on an account at many
   * providers, so an unverified one must never sign its IAM account in.
   */
  | { readonly _tag: "Unverified" }

export const linkVerdict = (identity: ProviderIdentity): LinkVerdict => {
  const email = identity.email?.trim() ?? ""
  if (email === "" || !email.includes("@")) return { _tag: "NoEmail" }
  if (!identity.emailVerified) return { _tag: "Unverified" }
  return { _tag: "Link", email: email.toLowerCase() }
}
