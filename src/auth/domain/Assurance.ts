import type { FactorRow, FactorType } from "./FactorRow.js"

/**
 * Authenticator assurance levels (GoTrue's aal/amr rules). Two facts, deliberately kept apart as GoTrue keeps them:
 * - a token's `aal` is computed from the session's amr claims at every mint: aal2 when any claim is a second factor;
 * - the gates (enroll, unenroll, password or email change, passkey management) read the session row's `aal` column.
 * They usually agree. They part when a session raised by two factors loses the one its row names: the row drops to
 * aal1 while the other factor's claim still mints aal2. That is GoTrue's behaviour, kept so a switching project sees
 * the same levels.
 */
export type Aal = "aal1" | "aal2"

/** The amr method a verified factor of each type adds to its session. */
export const METHOD_OF_FACTOR: Readonly<Record<FactorType, string>> = {
  totp: "totp",
  phone: "mfa/phone",
  webauthn: "mfa/webauthn"
}

const SECOND_FACTOR_METHODS: ReadonlySet<string> = new Set(Object.values(METHOD_OF_FACTOR))

/** Whether an amr method is a second factor. A passkey is a first factor: it signs in at aal1. */
export const isSecondFactorMethod = (method: string): boolean => SECOND_FACTOR_METHODS.has(method)

/** A token's aal, from its session's claims. */
export const aalOfClaims = (claims: ReadonlyArray<{ readonly method: string }>): Aal =>
  claims.some((claim) => isSecondFactorMethod(claim.method)) ? "aal2" : "aal1"

/** The level a user can reach: aal2 once any factor is verified (auth-js's nextLevel reads the same). */
export const highestAal = (factors: ReadonlyArray<Pick<FactorRow, "status">>): Aal =>
  factors.some((factor) => factor.status === "verified") ? "aal2" : "aal1"

/**
 * Whether an action guarded by the level needs a second factor first: the user has a verified factor and the
 * session row (not the token) is below aal2. A request without a session counts as below.
 */
export const needsAal2 = (factors: ReadonlyArray<Pick<FactorRow, "status">>, sessionAal: string | null | undefined): boolean =>
  highestAal(factors) === "aal2" && sessionAal !== "aal2"

/**
 * GoTrue's CalculateAALAndAMR: an `sso/saml` claim names its SSO provider when the user's one identity is an SSO one
 * (`sso:<provider id>`); every other claim, and every user with another identity or several, keeps its claims as they are.
 */
export const withSsoProvider = <C extends { readonly method: string }>(
  claims: ReadonlyArray<C>,
  identityProviders: ReadonlyArray<string>
): ReadonlyArray<C | (C & { readonly provider: string })> => {
  const only = identityProviders.length === 1 ? identityProviders[0]! : ""
  if (!only.startsWith("sso:")) return claims
  return claims.map((claim) => claim.method === "sso/saml" ? { ...claim, provider: only.slice("sso:".length) } : claim)
}
