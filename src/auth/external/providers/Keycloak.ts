import { Effect, Option } from "effect"
import type { OAuthProviderConfig } from "../../../config/AppConfig.js"
import type { OAuthProvider } from "../OAuthProvider.js"
import { asObject, authorizationUrl, clientFor, exchangeWith, getJson, mapped } from "../ProviderKit.js"
import { Either } from "effect"
import { booleanClaim, type ProviderProfile, stringClaim } from "../OAuthProvider.js"

/** Keycloak's OpenID Connect endpoints under a realm URL (`https://sso.example.com/realms/main`). */
export const keycloakEndpoints = (realmUrl: string) => {
  const base = `${realmUrl.replace(/\/+$/, "")}/protocol/openid-connect`
  return { authorization: `${base}/auth`, token: `${base}/token`, userinfo: `${base}/userinfo`, jwks: `${base}/certs` }
}

/**
 * `openid` first: Keycloak 20 and later answers userinfo only for tokens granted it (GoTrue leaves it out, a known
 * complaint); profile and email are GoTrue's defaults.
 */
export const KEYCLOAK_SCOPES: ReadonlyArray<string> = ["openid", "profile", "email"]

/** A userinfo answer as a profile, with GoTrue's identity_data claim names; without a `sub` there is no user. */
export const keycloakProfile = (userinfo: Readonly<Record<string, unknown>>, issuer: string): Either.Either<ProviderProfile, string> => {
  const sub = stringClaim(userinfo, "sub")
  if (sub === null) return Either.left("userinfo has no sub")
  const email = stringClaim(userinfo, "email")
  const emailVerified = email !== null && booleanClaim(userinfo, "email_verified")
  const name = stringClaim(userinfo, "name")
  const picture = stringClaim(userinfo, "picture")
  const phone = stringClaim(userinfo, "phone_number")
  const claims: Record<string, unknown> = {
    iss: issuer,
    sub,
    provider_id: sub,
    email_verified: emailVerified,
    phone_verified: phone !== null && booleanClaim(userinfo, "phone_number_verified")
  }
  if (email !== null) claims["email"] = email
  if (name !== null) Object.assign(claims, { name, full_name: name })
  if (picture !== null) Object.assign(claims, { picture, avatar_url: picture })
  if (phone !== null) claims["phone"] = phone
  const username = stringClaim(userinfo, "preferred_username")
  if (username !== null) claims["preferred_username"] = username
  return Either.right({ providerId: sub, email, emailVerified, name, avatarUrl: picture, claims })
}

/** Keycloak (OIDC) at the realm URL EXTERNAL_KEYCLOAK_URL. */
export const keycloak = (config: OAuthProviderConfig): OAuthProvider => {
  const realm = Option.getOrElse(config.url, () => "")
  const endpoints = keycloakEndpoints(realm)
  const client = clientFor(config)
  return {
    name: "keycloak",
    usesPkce: true,
    authorizationUrl: authorizationUrl(client, endpoints.authorization, KEYCLOAK_SCOPES),
    exchange: exchangeWith(config, endpoints.token),
    profile: (tokens) =>
      Effect.flatMap(getJson(endpoints.userinfo, tokens.accessToken), (userinfo) => mapped(keycloakProfile(asObject(userinfo), realm)))
  }
}
