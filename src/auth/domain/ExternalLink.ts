/**
 * Who an external sign-in (OAuth callback, ID token) is, as a pure rule (reference §8 "Account linking").
 *
 * The rule, stricter than GoTrue's where GoTrue is loose:
 * - The identity (provider, subject) already exists: it is that user's sign-in.
 * - Otherwise a user holding the same email is linked only when the provider says the email is verified. GoTrue
 *   also links when MAILER_AUTOCONFIRM is on; Gatehouse never links on an address nobody proved.
 * - Linking to an unconfirmed user is a reclaim, as GoTrue's RemoveUnconfirmedIdentities: nobody proved that user
 *   owned the address, so its password and other identities are dropped and the verified identity takes the
 *   account over. Nothing unproven is merged, which is what stops a pre-registered account from being hijacked.
 * - Otherwise a new user is made (unless sign-ups are off). It keeps the provider's email only when no user holds
 *   it yet; an address taken by a user that may not be linked is left off the new user, as GoTrue does, rather than
 *   merged or refused.
 * - A banned user is refused.
 */

/** A user the sign-in could belong to, reduced to what the rule reads. */
export interface LinkCandidate {
  readonly userId: string
  /** The user has a confirmed email or phone (GoTrue's IsConfirmed). */
  readonly confirmed: boolean
  readonly banned: boolean
}

export interface LinkInput {
  /** The user that already holds this (provider, subject) identity. */
  readonly identityOwner: LinkCandidate | undefined
  /** The user of this audience whose email is the provider's email (case-insensitive). */
  readonly emailOwner: LinkCandidate | undefined
  /** Some user, in any audience, holds the provider's email (the column is unique across audiences). */
  readonly emailTaken: boolean
  /** The provider's email, lower-cased; undefined when it gave none. */
  readonly email: string | undefined
  readonly emailVerified: boolean
  readonly signupDisabled: boolean
}

export type LinkDecision =
  | { readonly _tag: "Existing"; readonly userId: string }
  | { readonly _tag: "Link"; readonly userId: string; readonly reclaim: boolean }
  | { readonly _tag: "Create"; readonly email: string | null; readonly confirmed: boolean }
  | { readonly _tag: "Refuse"; readonly reason: "user_banned" | "signup_disabled" }

export const decideLink = (input: LinkInput): LinkDecision => {
  const { email, emailOwner, emailVerified, identityOwner } = input
  if (identityOwner !== undefined) {
    return identityOwner.banned ? { _tag: "Refuse", reason: "user_banned" } : { _tag: "Existing", userId: identityOwner.userId }
  }
  if (email !== undefined && emailVerified && emailOwner !== undefined) {
    return emailOwner.banned
      ? { _tag: "Refuse", reason: "user_banned" }
      : { _tag: "Link", userId: emailOwner.userId, reclaim: !emailOwner.confirmed }
  }
  if (input.signupDisabled) return { _tag: "Refuse", reason: "signup_disabled" }
  const kept = email !== undefined && emailOwner === undefined && !input.emailTaken ? email : null
  return { _tag: "Create", email: kept, confirmed: kept !== null && emailVerified }
}

/**
 * What happens after the user is found or made: a confirmed user signs in; an unconfirmed one is confirmed by a
 * verified provider email, and otherwise may not sign in until the address is verified (GoTrue's
 * provider_email_needs_verification, with the user and identity kept).
 */
export type SettleOutcome = "sign_in" | "confirm" | "needs_verification"

export const settle = (userConfirmed: boolean, emailVerified: boolean): SettleOutcome =>
  userConfirmed ? "sign_in" : emailVerified ? "confirm" : "needs_verification"

/** app_metadata.providers after a sign-in: each provider of the user's identities once, oldest first. */
export const providersOf = (identityProviders: ReadonlyArray<string>): ReadonlyArray<string> => [...new Set(identityProviders)]

/** app_metadata after a sign-in with `provider`: the first provider the user had stays, providers from the identities. */
export const appMetadataAfterSignIn = (
  current: Record<string, unknown> | null,
  provider: string,
  identityProviders: ReadonlyArray<string>
): Record<string, unknown> => ({
  ...current,
  provider: typeof current?.["provider"] === "string" ? current["provider"] : provider,
  providers: providersOf(identityProviders)
})

/** A provider's account as the provider vouches for it (a verified ID token, a profile read with an access token). */
export interface ExternalProfile {
  /** The provider's subject: the identity's provider_id. */
  readonly providerId: string
  readonly email?: string | undefined
  readonly emailVerified: boolean
  readonly name?: string | undefined
  readonly avatarUrl?: string | undefined
  /**
   * The provider's other claims, already in GoTrue's Claims shape (iss, given_name, family_name, locale,
   * custom_claims, …); the named fields above win over keys of the same name here.
   */
  readonly claims: Readonly<Record<string, unknown>>
}

/** The provider's email as the rule compares it: trimmed and lower-cased, undefined when empty. */
export const profileEmail = (profile: ExternalProfile): string | undefined => {
  const email = profile.email?.trim().toLowerCase() ?? ""
  return email === "" ? undefined : email
}

/**
 * The identity's identity_data, which GoTrue also merges into user_metadata: its Claims struct with empty fields
 * left out, except email_verified and phone_verified, which are always there; name doubles as full_name and the
 * avatar as picture (GoTrue keeps both spellings for old clients).
 */
export const externalIdentityData = (profile: ExternalProfile): Record<string, unknown> => {
  const email = profileEmail(profile)
  const present = (value: string | undefined): value is string => value !== undefined && value !== ""
  return {
    ...profile.claims,
    sub: profile.providerId,
    provider_id: profile.providerId,
    ...(email !== undefined ? { email } : {}),
    ...(present(profile.name) ? { name: profile.name, full_name: profile.name } : {}),
    ...(present(profile.avatarUrl) ? { avatar_url: profile.avatarUrl, picture: profile.avatarUrl } : {}),
    email_verified: email !== undefined && profile.emailVerified,
    phone_verified: false
  }
}
