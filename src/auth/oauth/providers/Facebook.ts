import { createHmac } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import { type ProviderProfile, stringClaim } from "../OAuthProvider.js"
import { asObject, authorizationUrl, clientFor, exchangeWith, getJson, mapped } from "../ProviderKit.js"

/** The Graph API version every call is pinned to: an unversioned call gets the app's oldest available version. */
export const FACEBOOK_GRAPH_VERSION = "v22.0"

const PROFILE_FIELDS = "id,name,first_name,last_name,email,picture"

/**
 * Facebook's endpoints: the login dialog on www.facebook.com, the token and the profile on graph.facebook.com.
 * EXTERNAL_FACEBOOK_URL replaces both origins (the paths, with the version, stay).
 */
export const facebookEndpoints = (baseUrl: string | undefined) => {
  const base = baseUrl?.replace(/\/+$/, "")
  const web = base ?? "https://www.facebook.com"
  const graph = base ?? "https://graph.facebook.com"
  return {
    authorization: `${web}/${FACEBOOK_GRAPH_VERSION}/dialog/oauth`,
    token: `${graph}/${FACEBOOK_GRAPH_VERSION}/oauth/access_token`,
    me: `${graph}/${FACEBOOK_GRAPH_VERSION}/me`,
    issuer: graph
  }
}

/** GoTrue's default; `public_profile` (id, name, picture) comes with every Facebook login. */
export const FACEBOOK_SCOPES: ReadonlyArray<string> = ["email"]

/**
 * Graph's `appsecret_proof`: the access token's HMAC-SHA256 under the app secret, in hex. Apps set to "Require App
 * Secret" get no answer without it, and it keeps a stolen token from being used from elsewhere.
 */
export const appSecretProof = (accessToken: string, appSecret: string): string =>
  createHmac("sha256", appSecret).update(accessToken).digest("hex")

/**
 * `GET /me?fields=…` as a profile. Facebook returns `email` only when the account's address is confirmed (an
 * unconfirmed or missing address leaves the field out), so an address that is there counts as verified.
 */
export const facebookProfile = (me: Readonly<Record<string, unknown>>, issuer: string): Either.Either<ProviderProfile, string> => {
  const id = stringClaim(me, "id")
  if (id === null) return Either.left("profile has no id")
  const email = stringClaim(me, "email")
  const emailVerified = email !== null
  const givenName = stringClaim(me, "first_name")
  const familyName = stringClaim(me, "last_name")
  const name = stringClaim(me, "name") ?? ([givenName, familyName].filter((part) => part !== null).join(" ") || null)
  const picture = stringClaim(asObject(asObject(me["picture"])["data"]), "url")
  const claims: Record<string, unknown> = { iss: issuer, sub: id, provider_id: id, email_verified: emailVerified, phone_verified: false }
  if (email !== null) claims["email"] = email
  if (name !== null) Object.assign(claims, { name, full_name: name })
  if (givenName !== null) claims["given_name"] = givenName
  if (familyName !== null) claims["family_name"] = familyName
  if (picture !== null) Object.assign(claims, { picture, avatar_url: picture })
  return Either.right({ providerId: id, email, emailVerified, name, avatarUrl: picture, claims })
}

/** Facebook Login, against Facebook or EXTERNAL_FACEBOOK_URL. */
export const facebook: ProviderDescriptor = {
  make: (config) => {
    const endpoints = facebookEndpoints(Option.getOrUndefined(config.url))
    const secret = Option.match(config.secret, { onNone: () => "", onSome: Redacted.value })
    return {
      name: "facebook",
      usesPkce: false,
      authorizationUrl: authorizationUrl(clientFor(config), endpoints.authorization, FACEBOOK_SCOPES),
      // Facebook documents the app's id and secret as parameters of the token request, not Basic auth.
      exchange: exchangeWith(config, endpoints.token, { credentials: "body" }),
      profile: (tokens) => {
        const query = new URLSearchParams({ fields: PROFILE_FIELDS, appsecret_proof: appSecretProof(tokens.accessToken, secret) })
        return Effect.flatMap(getJson(`${endpoints.me}?${query}`, tokens.accessToken), (me) =>
          mapped(facebookProfile(asObject(me), endpoints.issuer)))
      }
    }
  }
}
