/**
 * Manual unlinking (DELETE /user/identities/{identity_id}) as pure rules: which identity goes, and which address the
 * user keeps afterwards (GoTrue's DeleteIdentity and UpdateUserEmailFromIdentities).
 */

/** An identity reduced to what the rules read. */
export interface UnlinkCandidate {
  readonly id: string
  /** The identity's email column (lower-cased claims email), null when the provider gave none. */
  readonly email: string | null
  /** The provider's claims; email_verified says whether the provider vouched for the address. */
  readonly identity_data: Readonly<Record<string, unknown>>
}

export type UnlinkDecision<I extends UnlinkCandidate> =
  | { readonly _tag: "Unlink"; readonly identity: I; readonly remaining: ReadonlyArray<I> }
  | { readonly _tag: "Refuse"; readonly reason: "single_identity_not_deletable" | "identity_not_found" }

/** A user keeps at least one way to sign in; the last one is refused before the id is even looked at, as in GoTrue. */
export const decideUnlink = <I extends UnlinkCandidate>(identities: ReadonlyArray<I>, identityId: string): UnlinkDecision<I> => {
  if (identities.length <= 1) return { _tag: "Refuse", reason: "single_identity_not_deletable" }
  const wanted = identityId.toLowerCase()
  const identity = identities.find((candidate) => candidate.id.toLowerCase() === wanted)
  return identity === undefined
    ? { _tag: "Refuse", reason: "identity_not_found" }
    : { _tag: "Unlink", identity, remaining: identities.filter((candidate) => candidate !== identity) }
}

// GoTrue takes the first identity email that parses as an address; this is the shape check, not a validator.
const looksLikeAddress = (email: string): boolean => /^[^\s@]+@[^\s@]+$/.test(email)

/**
 * The user's email after an identity went: kept while some remaining identity still has it; otherwise the first
 * remaining identity's address that its provider verified (oldest first); kept too when no identity has one.
 * Undefined means "no change"; a new address is always a confirmed one.
 *
 * GoTrue moves to the first remaining address whatever its provider said, and keeps email_confirmed_at, so an
 * address nobody proved becomes the account's confirmed one: an attacker could link an identity carrying a victim's
 * unverified address, unlink their own email, and hold the victim's address when the victim later signs up.
 */
export const emailAfterUnlink = (
  userEmail: string | null,
  remaining: ReadonlyArray<UnlinkCandidate>
): string | undefined => {
  const current = (userEmail ?? "").toLowerCase()
  // As in GoTrue, a user without an email keeps having none while an identity without one (phone) remains.
  if (remaining.some((identity) => (identity.email ?? "").toLowerCase() === current)) return undefined
  const next = remaining.find((identity) =>
    identity.email !== null && looksLikeAddress(identity.email) && identity.identity_data["email_verified"] === true
  )
  return next === undefined || next.email === current ? undefined : next.email!
}
