import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import { type ProviderProfile, stringClaim } from "../OAuthProvider.js"
import { asObject, authorizationUrl, clientFor, exchangeWith, getJson, mapped } from "../ProviderKit.js"

/**
 * Spotify's endpoints: authorization and token on accounts.spotify.com, the Web API on api.spotify.com.
 * EXTERNAL_SPOTIFY_URL replaces both origins.
 */
export const spotifyEndpoints = (baseUrl: string | undefined) => {
  const base = baseUrl?.replace(/\/+$/, "")
  const accounts = base ?? "https://accounts.spotify.com"
  const api = `${base ?? "https://api.spotify.com"}/v1`
  return { authorization: `${accounts}/authorize`, token: `${accounts}/api/token`, me: `${api}/me`, issuer: api }
}

/** GoTrue's default: the address comes only with this scope. */
export const SPOTIFY_SCOPES: ReadonlyArray<string> = ["user-read-email"]

/** The largest of the user's images (Spotify lists several sizes, in no promised order). */
const largestImage = (images: unknown): string | null => {
  if (!Array.isArray(images)) return null
  const candidates = images.map(asObject).filter((image) => stringClaim(image, "url") !== null)
  const width = (image: Readonly<Record<string, unknown>>) => typeof image["width"] === "number" ? image["width"] : 0
  const best = candidates.reduce<Readonly<Record<string, unknown>> | null>((a, b) => a === null || width(b) > width(a) ? b : a, null)
  return best === null ? null : stringClaim(best, "url")
}

/**
 * `GET /v1/me` as a profile. Spotify does not verify the address an account signs up with (its documentation says
 * the email "is unverified; there is no proof that it actually belongs to the user"), so it is never verified here.
 */
export const spotifyProfile = (me: Readonly<Record<string, unknown>>, issuer: string): Either.Either<ProviderProfile, string> => {
  const id = stringClaim(me, "id")
  if (id === null) return Either.left("profile has no id")
  const email = stringClaim(me, "email")
  const name = stringClaim(me, "display_name")
  const picture = largestImage(me["images"])
  const claims: Record<string, unknown> = { iss: issuer, sub: id, provider_id: id, email_verified: false, phone_verified: false }
  if (email !== null) claims["email"] = email
  if (name !== null) Object.assign(claims, { name, full_name: name })
  if (picture !== null) Object.assign(claims, { picture, avatar_url: picture })
  return Either.right({ providerId: id, email, emailVerified: false, name, avatarUrl: picture, claims })
}

/** Spotify, against Spotify or EXTERNAL_SPOTIFY_URL. */
export const spotify: ProviderDescriptor = {
  make: (config) => {
    const endpoints = spotifyEndpoints(Option.getOrUndefined(config.url))
    return {
      name: "spotify",
      // Spotify's authorization code flow takes an S256 challenge, with or without a client secret.
      usesPkce: true,
      authorizationUrl: authorizationUrl(clientFor(config), endpoints.authorization, SPOTIFY_SCOPES),
      exchange: exchangeWith(config, endpoints.token),
      profile: (tokens) => Effect.flatMap(getJson(endpoints.me, tokens.accessToken), (me) => mapped(spotifyProfile(asObject(me), endpoints.issuer)))
    }
  }
}
