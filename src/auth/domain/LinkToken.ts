import { createHash } from "node:crypto"
import * as Duration from "effect/Duration"
import type { VerifyType } from "./Verification.js"

/**
 * The link a mail carries, as pure rules. GoTrue's link is the typed code's hash, sha224(address + code): with no
 * key and only 10^6 codes, anyone who knows the address computes every candidate offline, and a wrong hash names no
 * user, so nothing counts the guesses. Gatehouse's link is a random token of its own, independent of the code and
 * stored only as a digest; the code, which a person types, keeps its per-user attempt counter.
 */

/** Which of a user's pending tokens a code or link is counted and stored against (one per users column). */
export type TokenKind = "confirmation" | "recovery" | "email_change_new" | "email_change_current" | "phone_change"

/** 224 random bits: the 56 hex characters of GoTrue's hashes, so an app that checks the shape keeps working. */
export const LINK_TOKEN_BYTES = 28

/** The stored form of a link token: its SHA-256, in hex. A leaked table gives no usable link. */
export const linkDigest = (link: string): string => createHash("sha256").update(link, "utf8").digest("hex")

/** The kinds of pending token a verification of `type` may name (GoTrue's token_type per verify type). */
export const kindsOfType = (type: VerifyType): ReadonlyArray<TokenKind> => {
  switch (type) {
    case "signup":
    case "invite":
    case "sms":
      return ["confirmation"]
    case "recovery":
    case "magiclink":
      return ["recovery"]
    case "email":
      return ["confirmation", "recovery"]
    case "email_change":
      return ["email_change_new", "email_change_current"]
    case "phone_change":
      return ["phone_change"]
  }
}

/**
 * The pending tokens a successful verification of `type` spends: the one it used and the user's other pending tokens
 * of that kind, which are every token a verification of that type could have named (kindsOfType). So an email change
 * that applied spends both halves, an `email` code both emailed codes (the sign-up's and the recovery's), and a
 * recovery or magic link the recovery token both share. The first half of a double email change spends only its
 * own half: the other is still to be confirmed. Tokens of other kinds (a pending email change after a magic link,
 * say) stay valid. GoTrue instead deletes every one_time_tokens row of the user, which ends the other kinds' links
 * but not their codes, still valid in the users columns; here links and codes go together.
 */
export const spentByVerification = (type: VerifyType, used: TokenKind, completed: boolean): ReadonlyArray<TokenKind> =>
  completed ? kindsOfType(type) : [used]

/**
 * Whether the users column still holds the code a link was issued with: spending, replacing or clearing the token
 * there (a verification, a new mail, a password change) kills its link too, whoever did it.
 */
export const isLiveLink = (stored: string | null, issuedWith: string): boolean =>
  stored !== null && stored !== "" && stored === issuedWith

/**
 * Whether GoTrue's form of a link (the stored code hash itself) is still taken for a pending token: only for one
 * that GoTrue wrote (no row of Gatehouse's was issued with it) before this database began issuing link tokens.
 * Such a token then lives out its own lifetime, so links mailed before a switch from GoTrue keep working.
 */
export const acceptsLegacyLink = (token: {
  readonly sentAt: Date | null
  readonly issuedByGatehouse: boolean
  readonly linkTokensSince: Date
}): boolean => !token.issuedByGatehouse && token.sentAt !== null && token.sentAt.getTime() < token.linkTokensSince.getTime()

/**
 * Whether any legacy link can still be valid at `now`: none once the longest lifetime has passed since link tokens
 * began, and then no lookup by code hash (an unindexed scan of users) is made at all.
 */
export const legacyLinksPossible = (linkTokensSince: Date, lifetime: Duration.Duration, now: Date): boolean =>
  now.getTime() <= linkTokensSince.getTime() + Duration.toMillis(lifetime)

/** What a sign-up of an address that is already signed up and unconfirmed brings: its password and its data. */
export interface SignupClaim {
  /** The bcrypt hash of that sign-up's password. */
  readonly password: string
  readonly data: Record<string, unknown>
}

/** What confirming a pending confirmation does to the account besides confirming it. */
export interface ConfirmationClaim {
  /**
   * The address was signed up more than once while unconfirmed, so nobody has proven which sign-up was the owner's:
   * the confirmation clears every password, identity and session of the account but what it brings itself.
   */
  readonly reclaim: boolean
  /** The password the confirmation activates when it reclaims (null: none; the owner signs in by the link). */
  readonly password: string | null
  readonly data: Record<string, unknown> | null
}

/**
 * The claim of a new confirmation. A repeated sign-up reclaims with its own password. Anything else that sends a
 * confirmation (a /resend, an admin link) brings no password, so on an account already contested it reclaims with
 * none: keeping an earlier sign-up's password would hand the account to whoever chose it.
 */
export const nextConfirmationClaim = (
  previous: { readonly reclaim: boolean } | undefined,
  repeated: SignupClaim | undefined
): ConfirmationClaim =>
  repeated !== undefined
    ? { reclaim: true, password: repeated.password, data: repeated.data }
    : { reclaim: previous?.reclaim ?? false, password: null, data: null }
