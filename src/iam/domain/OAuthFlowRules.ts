import { createHash } from "node:crypto"

/**
 * The rules of IAM's OAuth2 sign-in (docs/iam.md, "OAuth2 sign-in"): what a started flow is named by, when it can
 * still be finished, and which provider identity may link or sign in an account. Pure: the service draws the
 * randomness, takes the rows and asks these.
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
  /** A link flow's account (its holder started it signed in); null for a sign-in flow. */
  readonly linkUserId: number | null
}

export type FlowState =
  | { readonly _tag: "Unknown" }
  /** Past its expiry (the instant itself is still good). */
  | { readonly _tag: "Expired" }
  | { readonly _tag: "Usable"; readonly provider: string; readonly codeVerifier: string | null; readonly linkUserId: number | null }

export const flowState = (flow: StoredFlow | undefined, now: Date): FlowState =>
  flow === undefined ? { _tag: "Unknown" }
  : now.getTime() > flow.expiresAt.getTime() ? { _tag: "Expired" }
  : { _tag: "Usable", provider: flow.provider, codeVerifier: flow.codeVerifier, linkUserId: flow.linkUserId }

/** The identity a provider vouched for, as far as linking needs it. */
export interface ProviderIdentity {
  /** The provider's id for the person (OpenID's `sub`): stable, unlike the email. */
  readonly subject: string
  readonly email: string | null
  readonly emailVerified: boolean
}

export type LinkVerdict =
  /** The provider vouches for this email (lower-cased, as IAM stores emails). */
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

/** What a finished flow does. */
export type FinishVerdict =
  /** A sign-in flow whose provider identity an account linked: sign that account in. */
  | { readonly _tag: "SignIn"; readonly userId: number }
  /** A link flow the provider vouched for: link the identity to the flow's account (if no other holds it), sign in. */
  | { readonly _tag: "Link"; readonly userId: number }
  /** A link flow for an identity another account linked first. */
  | { readonly _tag: "Taken" }
  | { readonly _tag: "Refused"; readonly reason: string }

export const NOT_LINKED = "no account has linked this provider identity: sign in, then link it (StartOAuthSignIn with the account's access token)"

export const NOT_THE_LINKER = "a link is finished with the access token of the account that started it"

/**
 * Which account a finished flow signs in, from the flow, the identity the provider vouched for, the account that
 * linked that identity (if any), for a link flow its account's email (undefined once the account is gone), and who
 * finishes (the account whose access token came with the finish, or null).
 *
 * An email alone never signs anyone in: Register takes an email on the caller's word, so an account with someone's
 * address may be a squatter's, made before its owner ever came (a pre-account takeover). A sign-in flow signs in
 * only the account that linked the provider's subject; a link flow, started by a signed-in holder, links only when
 * the provider verified that the holder's account email is the person's, and only when that same holder finishes it:
 * a link flow's URL sent to someone else, who logs in at the provider, must not link their identity to the sender's
 * account (login CSRF, RFC 6749 section 10.12).
 */
export const finishVerdict = (input: {
  readonly linkUserId: number | null
  readonly identity: ProviderIdentity
  readonly linkedUserId: number | undefined
  readonly linkAccountEmail: string | undefined
  readonly finisherUserId: number | null
}): FinishVerdict => {
  if (input.identity.subject === "") return { _tag: "Refused", reason: "the provider gave no subject" }
  if (input.linkUserId === null) {
    return input.linkedUserId === undefined ? { _tag: "Refused", reason: NOT_LINKED } : { _tag: "SignIn", userId: input.linkedUserId }
  }
  if (input.finisherUserId !== input.linkUserId) return { _tag: "Refused", reason: NOT_THE_LINKER }
  if (input.linkAccountEmail === undefined) return { _tag: "Refused", reason: "the account to link is gone" }
  const verdict = linkVerdict(input.identity)
  if (verdict._tag === "NoEmail") return { _tag: "Refused", reason: "the provider gave no email" }
  if (verdict._tag === "Unverified") return { _tag: "Refused", reason: "the provider has not verified this email" }
  if (verdict.email !== input.linkAccountEmail.trim().toLowerCase()) {
    return { _tag: "Refused", reason: "the provider's verified email is not this account's" }
  }
  if (input.linkedUserId !== undefined && input.linkedUserId !== input.linkUserId) {
    return { _tag: "Taken" }
  }
  return { _tag: "Link", userId: input.linkUserId }
}
