import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { AuthError } from "../../domain/AuthError.js"
import type { ExternalProfile } from "../../domain/ExternalLink.js"
import { badIdToken, claimString, idTokenBase, pickClaims, withoutTrailingSlash } from "../../domain/IdToken.js"
import { booleanClaim, type ProviderProfile, stringClaim } from "../OAuthProvider.js"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import { asObject, authorizationUrl, clientFor, exchangeWith, getJson, mapped, redirectClientId, verifiedIdToken } from "../ProviderKit.js"

/**
 * Keycloak's OpenID Connect endpoints under a realm URL (`https://sso.example.com/realms/main`), and the issuer its
 * ID tokens name: the realm URL itself.
 */
export const keycloakEndpoints = (realmUrl: string) => {
  const issuer = realmUrl.replace(/\/+$/, "")
  const base = `${issuer}/protocol/openid-connect`
  return { authorization: `${base}/auth`, token: `${base}/token`, userinfo: `${base}/userinfo`, jwks: `${base}/certs`, issuer }
}

/**
 * `openid` first: Keycloak 20 and later answers userinfo only for tokens granted it (GoTrue leaves it out, a known
 * complaint); profile and email are GoTrue's defaults.
 */
export const KEYCLOAK_SCOPES: ReadonlyArray<string> = ["openid", "profile", "email"]

/**
 * A userinfo answer as a profile, with GoTrue's identity_data claim names. Its `sub` must be the verified ID token's
 * (OpenID Connect Core §5.3.2): userinfo is only as good as the access token it was asked with, and the ID token is
 * what the realm signed for this client. Without a `sub` there is no user.
 */
export const keycloakProfile = (
  userinfo: Readonly<Record<string, unknown>>,
  idTokenSubject: unknown,
  issuer: string
): Either.Either<ProviderProfile, string> => {
  const sub = stringClaim(userinfo, "sub")
  if (sub === null) return Either.left("userinfo has no sub")
  if (sub !== idTokenSubject) return Either.left("userinfo's sub is not the id_token's")
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

/** The OpenID Connect profile claims GoTrue's Claims struct keeps for a generic provider. */
const STANDARD_CLAIMS = [
  "given_name", "family_name", "middle_name", "nickname", "preferred_username", "profile", "website", "gender",
  "birthdate", "zoneinfo", "locale", "updated_at", "phone"
] as const

/**
 * A verified keycloak ID token as GoTrue's parser reads a generic OpenID provider's: it must give an email, as GoTrue
 * requires (Bad ID token otherwise), and its standard profile claims are kept.
 */
export const keycloakIdTokenProfile = (payload: Readonly<Record<string, unknown>>): Either.Either<ExternalProfile, AuthError> =>
  Either.flatMap(idTokenBase(payload), ({ base, issuer }) =>
    base.email === undefined ? Either.left(badIdToken()) : Either.right({
      ...base,
      name: claimString(payload["name"]),
      avatarUrl: claimString(payload["picture"]),
      claims: { ...issuer, ...pickClaims(payload, STANDARD_CLAIMS) }
    }))

/**
 * Keycloak (OIDC) at the realm URL EXTERNAL_KEYCLOAK_URL. The ID token the token endpoint answers (`openid` is always
 * asked for) is verified first, by the verifier apple and azure use: signed by a key of the realm's set, issued by
 * the realm to our client, unexpired. GoTrue reads userinfo alone; a forged or misdirected token ends the sign-in
 * here before userinfo is asked.
 */
export const keycloak: ProviderDescriptor = {
  make: (config) => {
    const realm = Option.getOrElse(config.url, () => "")
    const endpoints = keycloakEndpoints(realm)
    const client = clientFor(config)
    return {
      name: "keycloak",
      usesPkce: true,
      authorizationUrl: authorizationUrl(client, endpoints.authorization, KEYCLOAK_SCOPES),
      exchange: exchangeWith(config, endpoints.token),
      profile: (tokens) =>
        Effect.gen(function*() {
          const claims = yield* verifiedIdToken(tokens.idToken, {
            jwksUrl: endpoints.jwks,
            audience: redirectClientId(config),
            issuer: endpoints.issuer
          })
          const userinfo = yield* getJson(endpoints.userinfo, tokens.accessToken)
          return yield* mapped(keycloakProfile(asObject(userinfo), claims["sub"], realm))
        })
    }
  },
  // The realm URL is the provider: there is no public instance to fall back on.
  urlRequired: true,
  // A native app's token: the realm URL is its issuer, so it names keycloak only when keycloak is on with that URL.
  idToken: {
    order: 4,
    issuedBy: (issuer, settings) =>
      settings.enabled && Option.isSome(settings.url) && withoutTrailingSlash(issuer) === withoutTrailingSlash(settings.url.value),
    expectedIssuer: (_, settings) => Either.right(Option.getOrElse(Option.map(settings.url, withoutTrailingSlash), () => "")),
    jwksUrl: (url) => keycloakEndpoints(url ?? "").jwks,
    profile: keycloakIdTokenProfile
  }
}
