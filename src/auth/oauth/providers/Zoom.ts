import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import { type ProviderProfile, stringClaim } from "../OAuthProvider.js"
import { asObject, authorizationUrl, clientFor, exchangeWith, getJson, mapped } from "../ProviderKit.js"

/**
 * Zoom's endpoints: the OAuth pages on zoom.us and the REST API on api.zoom.us/v2. EXTERNAL_ZOOM_URL replaces both
 * hosts (as GoTrue's does): `<url>/oauth/authorize`, `<url>/oauth/token`, `<url>/v2/users/me`.
 */
export const zoomEndpoints = (baseUrl: string | undefined) => {
  const web = (baseUrl ?? "https://zoom.us").replace(/\/+$/, "")
  const api = `${baseUrl === undefined ? "https://api.zoom.us" : web}/v2`
  return { authorization: `${web}/oauth/authorize`, token: `${web}/oauth/token`, me: `${api}/users/me`, issuer: api }
}

/**
 * None by default, as GoTrue: a Zoom app's scopes are chosen in its Marketplace settings and granted as configured
 * there; an app can still ask for more with `scopes`.
 */
export const ZOOM_SCOPES: ReadonlyArray<string> = []

/**
 * `GET /v2/users/me` as a profile. Zoom's `verified` is 1 when the user has verified the address and 0 otherwise;
 * anything else (absent, a string) is not taken as verified.
 */
export const zoomProfile = (user: Readonly<Record<string, unknown>>, issuer: string): Either.Either<ProviderProfile, string> => {
  const id = stringClaim(user, "id")
  if (id === null) return Either.left("user has no id")
  const email = stringClaim(user, "email")
  const emailVerified = email !== null && user["verified"] === 1
  const first = stringClaim(user, "first_name")
  const last = stringClaim(user, "last_name")
  const joined = [first, last].filter((part) => part !== null).join(" ")
  const name = stringClaim(user, "display_name") ?? (joined === "" ? null : joined)
  const picture = stringClaim(user, "pic_url")
  const claims: Record<string, unknown> = { iss: issuer, sub: id, provider_id: id, email_verified: emailVerified, phone_verified: false }
  if (email !== null) claims["email"] = email
  if (name !== null) Object.assign(claims, { name, full_name: name })
  if (first !== null) claims["given_name"] = first
  if (last !== null) claims["family_name"] = last
  if (picture !== null) Object.assign(claims, { picture, avatar_url: picture })
  return Either.right({ providerId: id, email, emailVerified, name, avatarUrl: picture, claims })
}

/** Zoom, or a stand-in at EXTERNAL_ZOOM_URL. */
export const zoom: ProviderDescriptor = {
  make: (config) => {
    const endpoints = zoomEndpoints(Option.getOrUndefined(config.url))
    const client = clientFor(config)
    return {
      name: "zoom",
      // Zoom's OAuth takes an S256 challenge on the authorization code flow.
      usesPkce: true,
      authorizationUrl: authorizationUrl(client, endpoints.authorization, ZOOM_SCOPES),
      // Zoom wants the client credentials in Basic auth.
      exchange: exchangeWith(config, endpoints.token),
      profile: (tokens) => Effect.flatMap(getJson(endpoints.me, tokens.accessToken), (user) => mapped(zoomProfile(asObject(user), endpoints.issuer)))
    }
  }
}
