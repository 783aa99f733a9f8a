import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import { booleanClaim, type ProviderProfile, stringClaim } from "../OAuthProvider.js"
import { asObject, authorizationUrl, clientFor, exchangeWith, getJson, mapped } from "../ProviderKit.js"

/**
 * Sign In with LinkedIn using OpenID Connect: authorization and token on www.linkedin.com, userinfo on
 * api.linkedin.com. EXTERNAL_LINKEDIN(_OIDC)_URL replaces both origins.
 */
export const linkedinEndpoints = (baseUrl: string | undefined) => {
  const base = baseUrl?.replace(/\/+$/, "")
  const web = base ?? "https://www.linkedin.com"
  const api = base ?? "https://api.linkedin.com"
  return {
    authorization: `${web}/oauth/v2/authorization`,
    token: `${web}/oauth/v2/accessToken`,
    userinfo: `${api}/v2/userinfo`,
    issuer: `${web}/oauth`
  }
}

export const LINKEDIN_SCOPES: ReadonlyArray<string> = ["openid", "profile", "email"]

/** `/v2/userinfo` (standard OIDC claims) as a profile; the address is verified only by `email_verified`. */
export const linkedinProfile = (userinfo: Readonly<Record<string, unknown>>, issuer: string): Either.Either<ProviderProfile, string> => {
  const sub = stringClaim(userinfo, "sub")
  if (sub === null) return Either.left("userinfo has no sub")
  const email = stringClaim(userinfo, "email")
  const emailVerified = email !== null && booleanClaim(userinfo, "email_verified")
  const givenName = stringClaim(userinfo, "given_name")
  const familyName = stringClaim(userinfo, "family_name")
  const name = stringClaim(userinfo, "name") ?? ([givenName, familyName].filter((part) => part !== null).join(" ") || null)
  const picture = stringClaim(userinfo, "picture")
  const claims: Record<string, unknown> = { iss: issuer, sub, provider_id: sub, email_verified: emailVerified, phone_verified: false }
  if (email !== null) claims["email"] = email
  if (name !== null) Object.assign(claims, { name, full_name: name })
  if (givenName !== null) claims["given_name"] = givenName
  if (familyName !== null) claims["family_name"] = familyName
  if (picture !== null) Object.assign(claims, { picture, avatar_url: picture })
  return Either.right({ providerId: sub, email, emailVerified, name, avatarUrl: picture, claims })
}

/**
 * LinkedIn's OpenID Connect sign-in, served under both names: `linkedin_oidc`, and `linkedin`, whose legacy "Sign In
 * with LinkedIn" product (r_liteprofile, /v2/me) LinkedIn has retired.
 */
export const linkedinOidc = (name: "linkedin" | "linkedin_oidc"): ProviderDescriptor => ({
  make: (config) => {
    const endpoints = linkedinEndpoints(Option.getOrUndefined(config.url))
    return {
      name,
      // LinkedIn takes PKCE only from native apps it has approved for it.
      usesPkce: false,
      authorizationUrl: authorizationUrl(clientFor(config), endpoints.authorization, LINKEDIN_SCOPES),
      // LinkedIn takes the client credentials only in the body, not Basic auth.
      exchange: exchangeWith(config, endpoints.token, { credentials: "body" }),
      profile: (tokens) =>
        Effect.flatMap(getJson(endpoints.userinfo, tokens.accessToken), (userinfo) =>
          mapped(linkedinProfile(asObject(userinfo), endpoints.issuer)))
    }
  }
})
