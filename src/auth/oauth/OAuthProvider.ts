import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import type { OAuthProviderName } from "./OAuthProviders.js"

/** What a provider's token endpoint handed over for the user. */
export interface ProviderTokens {
  readonly accessToken: string
  readonly refreshToken: string | null
  /** The token endpoint's whole answer, for providers that put the user in it (Notion's `owner`). */
  readonly raw?: Readonly<Record<string, unknown>>
  /** The OpenID Connect ID token, when the token endpoint sent one (apple and azure read the profile from it). */
  readonly idToken?: string | null
}

/**
 * The user as a provider describes them, mapped to what sign-in needs. `claims` become the identity's
 * identity_data (and the new user's user_metadata), in GoTrue's claim names.
 */
export interface ProviderProfile {
  readonly providerId: string
  readonly email: string | null
  readonly emailVerified: boolean
  readonly name: string | null
  readonly avatarUrl: string | null
  readonly claims: Readonly<Record<string, unknown>>
}

/** A provider that could not be talked to, or answered something unusable; never shown to the browser in detail. */
export class ProviderFailure extends Data.TaggedError("ProviderFailure")<{
  readonly step: "exchange" | "profile"
  readonly reason: string
}> {}

export interface AuthorizationRequest {
  readonly state: string
  readonly extraScopes: ReadonlyArray<string>
  readonly codeVerifier: string | null
  /** The app's other /authorize parameters (prompt, login_hint, access_type, …), passed on as GoTrue passes them. */
  readonly passThrough: ReadonlyArray<readonly [string, string]>
}

/** The parameters the protocol owns; an app's parameter of the same name is not passed on. */
const PROTOCOL_PARAMETERS = new Set(["response_type", "client_id", "redirect_uri", "state", "scope", "code_challenge", "code_challenge_method"])

/** The authorization URL with the app's pass-through parameters added, never replacing the protocol's own. */
export const withPassThrough = (url: URL, passThrough: ReadonlyArray<readonly [string, string]>): URL => {
  for (const [key, value] of passThrough) {
    if (!PROTOCOL_PARAMETERS.has(key) && !url.searchParams.has(key)) url.searchParams.set(key, value)
  }
  return url
}

/**
 * The start of a sign-in that needs a round trip to the provider before the browser can go there (OAuth 1.0a's
 * request token). `handle` is what the provider's callback names the flow by in place of a state; `verifier` is
 * kept with the flow and handed back to `exchange` as its codeVerifier. Both are opaque to the framework.
 */
export interface ProviderStart {
  readonly url: URL
  readonly handle: string
  readonly verifier: string
}

/** One external identity provider, configured: where to send the browser, and how to turn a code into a profile. */
export interface OAuthProvider {
  readonly name: OAuthProviderName
  /** Whether the provider takes a PKCE challenge from us (the verifier then goes with the code exchange). */
  readonly usesPkce: boolean
  readonly authorizationUrl: (request: AuthorizationRequest) => URL
  /**
   * When present, /authorize starts here instead of at `authorizationUrl` (OAuth 1.0a, whose URL needs a request
   * token first); the callback then finds the flow by the handle (`oauth_token`) rather than by a state.
   */
  readonly begin?: (request: AuthorizationRequest) => Effect.Effect<ProviderStart, ProviderFailure>
  readonly exchange: (code: string, codeVerifier: string | null) => Effect.Effect<ProviderTokens, ProviderFailure>
  readonly profile: (tokens: ProviderTokens) => Effect.Effect<ProviderProfile, ProviderFailure>
  /**
   * For a provider that sends part of the user with the callback rather than in any token (Apple's `user` field, on
   * the first consent only): the profile with what was posted read into it, or why it could not be read.
   */
  readonly withPostedUser?: (profile: ProviderProfile, posted: string) => Either.Either<ProviderProfile, string>
}

/** `scopes` as GoTrue reads it: separated by commas or spaces; the provider's own scopes come first, once each. */
export const scopesWith = (defaults: ReadonlyArray<string>, extra: ReadonlyArray<string>): ReadonlyArray<string> =>
  [...new Set([...defaults, ...extra])]

export const parseScopes = (scopes: string | undefined): ReadonlyArray<string> =>
  (scopes ?? "").split(/[\s,]+/).filter((scope) => scope !== "")

/** A claim that is a non-empty string, or null. */
export const stringClaim = (claims: Readonly<Record<string, unknown>>, key: string): string | null => {
  const value = claims[key]
  return typeof value === "string" && value !== "" ? value : null
}

/** OIDC's email_verified, which some providers send as the string "true". */
export const booleanClaim = (claims: Readonly<Record<string, unknown>>, key: string): boolean =>
  claims[key] === true || claims[key] === "true"

/** What a plain-OAuth provider's user resource says, before it becomes a profile. */
export interface ProfileFields {
  readonly issuer: string
  readonly id: string
  readonly email: string | null
  readonly emailVerified: boolean
  readonly name: string | null
  readonly username?: string | null
  readonly avatar: string | null
  /** Provider-specific extras, kept under identity_data.custom_claims as GoTrue keeps them. */
  readonly customClaims?: Readonly<Record<string, unknown>>
}

/**
 * The profile of a provider without OpenID Connect claims, its identity_data in GoTrue's claim names (name also as
 * full_name, username as preferred_username and user_name, avatar as picture and avatar_url); absent values stay
 * absent rather than null.
 */
export const profileFromFields = (fields: ProfileFields): ProviderProfile => {
  const { avatar, email, emailVerified, id, issuer, name } = fields
  const username = fields.username ?? null
  const claims: Record<string, unknown> = { iss: issuer, sub: id, provider_id: id, email_verified: emailVerified, phone_verified: false }
  if (email !== null) claims["email"] = email
  if (name !== null) Object.assign(claims, { name, full_name: name })
  if (username !== null) Object.assign(claims, { preferred_username: username, user_name: username })
  if (avatar !== null) Object.assign(claims, { picture: avatar, avatar_url: avatar })
  if (fields.customClaims !== undefined && Object.keys(fields.customClaims).length > 0) claims["custom_claims"] = fields.customClaims
  return { providerId: id, email, emailVerified, name, avatarUrl: avatar, claims }
}
