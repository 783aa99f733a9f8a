import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import type { AuthError } from "../../domain/AuthError.js"
import type { ExternalProfile } from "../../domain/ExternalLink.js"
import { claimString, idTokenBase } from "../../domain/IdToken.js"
import { booleanClaim, type ProviderProfile, stringClaim } from "../OAuthProvider.js"
import { asObject, authorizationUrl, clientFor, exchangeWith, getJson, mapped } from "../ProviderKit.js"

/** The issuer of every Google ID token, whichever host serves the endpoints. */
export const GOOGLE_ISSUER = "https://accounts.google.com"

/**
 * Google's OAuth endpoints: the consent page on accounts.google.com, the token endpoint on oauth2.googleapis.com,
 * OpenID Connect userinfo on openidconnect.googleapis.com and the ID tokens' signing keys on www.googleapis.com.
 * EXTERNAL_GOOGLE_URL (a proxy, or a test's fake) replaces all four hosts with one, keeping Google's paths.
 */
export const googleEndpoints = (baseUrl: string | undefined) => {
  const at = (host: string) => baseUrl === undefined ? host : baseUrl.replace(/\/+$/, "")
  return {
    authorization: `${at("https://accounts.google.com")}/o/oauth2/v2/auth`,
    token: `${at("https://oauth2.googleapis.com")}/token`,
    userinfo: `${at("https://openidconnect.googleapis.com")}/v1/userinfo`,
    jwks: `${at("https://www.googleapis.com")}/oauth2/v3/certs`
  }
}

/** GoTrue's email and profile, with openid so the userinfo endpoint answers in OpenID Connect's claim names. */
export const GOOGLE_SCOPES: ReadonlyArray<string> = ["openid", "email", "profile"]

/**
 * A userinfo answer as a profile. Google says whether it verified the address (`email_verified`); a Workspace
 * account's domain (`hd`) is kept as a custom claim, as GoTrue keeps it.
 */
export const googleProfile = (userinfo: Readonly<Record<string, unknown>>): Either.Either<ProviderProfile, string> => {
  const sub = stringClaim(userinfo, "sub")
  if (sub === null) return Either.left("userinfo has no sub")
  const email = stringClaim(userinfo, "email")
  const emailVerified = email !== null && booleanClaim(userinfo, "email_verified")
  const name = stringClaim(userinfo, "name")
  const picture = stringClaim(userinfo, "picture")
  const hd = stringClaim(userinfo, "hd")
  const claims: Record<string, unknown> = { iss: GOOGLE_ISSUER, sub, provider_id: sub, email_verified: emailVerified, phone_verified: false }
  if (email !== null) claims["email"] = email
  if (name !== null) Object.assign(claims, { name, full_name: name })
  if (picture !== null) Object.assign(claims, { picture, avatar_url: picture })
  if (hd !== null) claims["custom_claims"] = { hd }
  return Either.right({ providerId: sub, email, emailVerified, name, avatarUrl: picture, claims })
}

/** A verified Google ID token as GoTrue's parser reads it: the name, the picture, a Workspace domain as a custom claim. */
export const googleIdTokenProfile = (payload: Readonly<Record<string, unknown>>): Either.Either<ExternalProfile, AuthError> =>
  Either.map(idTokenBase(payload), ({ base, issuer }) => {
    const hd = claimString(payload["hd"])
    return {
      ...base,
      name: claimString(payload["name"]),
      avatarUrl: claimString(payload["picture"]),
      claims: { ...issuer, ...(hd !== undefined ? { custom_claims: { hd } } : {}) }
    }
  })

/** Google (OAuth 2.0 with OpenID Connect userinfo). */
export const google: ProviderDescriptor = {
  make: (config) => {
    const endpoints = googleEndpoints(Option.getOrUndefined(config.url))
    const client = clientFor(config)
    return {
      name: "google",
      usesPkce: true,
      authorizationUrl: authorizationUrl(client, endpoints.authorization, GOOGLE_SCOPES),
      exchange: exchangeWith(config, endpoints.token, { credentials: "body" }),
      profile: (tokens) => Effect.flatMap(getJson(endpoints.userinfo, tokens.accessToken), (userinfo) => mapped(googleProfile(asObject(userinfo))))
    }
  },
  // A native app's token: by Google's issuer, whose keys are read under EXTERNAL_GOOGLE_URL like the other endpoints.
  idToken: {
    order: 2,
    issuedBy: (issuer) => issuer === GOOGLE_ISSUER,
    expectedIssuer: () => Either.right(GOOGLE_ISSUER),
    jwksUrl: (url) => googleEndpoints(url).jwks,
    profile: googleIdTokenProfile
  }
}
