import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import { booleanClaim, type ProviderProfile, stringClaim } from "../OAuthProvider.js"
import { asObject, authorizationUrl, clientFor, exchangeWith, getJson, mapped } from "../ProviderKit.js"

/** Sign in with Slack (OpenID Connect) under https://slack.com, or under EXTERNAL_SLACK(_OIDC)_URL, which replaces it. */
export const slackEndpoints = (baseUrl: string | undefined) => {
  const base = (baseUrl ?? "https://slack.com").replace(/\/+$/, "")
  return {
    authorization: `${base}/openid/connect/authorize`,
    token: `${base}/api/openid.connect.token`,
    userinfo: `${base}/api/openid.connect.userInfo`,
    issuer: base
  }
}

export const SLACK_SCOPES: ReadonlyArray<string> = ["openid", "profile", "email"]

const TEAM_ID = "https://slack.com/team_id"

/**
 * `openid.connect.userInfo` as a profile. Slack's Web API answers its errors with HTTP 200 and `{ok: false}`, so
 * that is a failure, not an empty user. The subject is the Slack user id; the workspace goes into custom_claims.
 */
export const slackProfile = (userinfo: Readonly<Record<string, unknown>>, issuer: string): Either.Either<ProviderProfile, string> => {
  if (userinfo["ok"] === false) return Either.left(`userInfo answered ${stringClaim(userinfo, "error") ?? "not ok"}`)
  const sub = stringClaim(userinfo, "sub")
  if (sub === null) return Either.left("userInfo has no sub")
  const email = stringClaim(userinfo, "email")
  const emailVerified = email !== null && booleanClaim(userinfo, "email_verified")
  const name = stringClaim(userinfo, "name")
  const picture = stringClaim(userinfo, "picture")
  const claims: Record<string, unknown> = { iss: issuer, sub, provider_id: sub, email_verified: emailVerified, phone_verified: false }
  if (email !== null) claims["email"] = email
  if (name !== null) Object.assign(claims, { name, full_name: name })
  if (picture !== null) Object.assign(claims, { picture, avatar_url: picture })
  for (const key of ["given_name", "family_name", "locale"]) {
    const value = stringClaim(userinfo, key)
    if (value !== null) claims[key] = value
  }
  const team = stringClaim(userinfo, TEAM_ID)
  if (team !== null) claims["custom_claims"] = { [TEAM_ID]: team }
  return Either.right({ providerId: sub, email, emailVerified, name, avatarUrl: picture, claims })
}

/**
 * Slack's OpenID Connect sign-in, served under both names: `slack_oidc`, and `slack`, whose legacy "Sign in with
 * Slack" (identity.* scopes, users.identity) Slack has retired for new apps. The subject is the same Slack user id
 * either way.
 */
export const slackOidc = (name: "slack" | "slack_oidc"): ProviderDescriptor => ({
  make: (config) => {
    const endpoints = slackEndpoints(Option.getOrUndefined(config.url))
    return {
      name,
      usesPkce: false,
      authorizationUrl: authorizationUrl(clientFor(config), endpoints.authorization, SLACK_SCOPES),
      // openid.connect.token documents client_id and client_secret as arguments of the call.
      exchange: exchangeWith(config, endpoints.token, { credentials: "body" }),
      profile: (tokens) =>
        Effect.flatMap(getJson(endpoints.userinfo, tokens.accessToken), (userinfo) => mapped(slackProfile(asObject(userinfo), endpoints.issuer)))
    }
  }
})
