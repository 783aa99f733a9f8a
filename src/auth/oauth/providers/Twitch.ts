import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import { type ProviderProfile, stringClaim } from "../OAuthProvider.js"
import { asObject, authorizationUrl, clientFor, exchangeWith, getJson, mapped, redirectClientId } from "../ProviderKit.js"

/**
 * Twitch's endpoints: the OAuth pages on id.twitch.tv and the Helix API on api.twitch.tv. EXTERNAL_TWITCH_URL
 * replaces both hosts (as GoTrue's does), keeping the paths: `<url>/oauth2/authorize`, `<url>/oauth2/token`,
 * `<url>/helix/users`.
 */
export const twitchEndpoints = (baseUrl: string | undefined) => {
  const id = (baseUrl ?? "https://id.twitch.tv").replace(/\/+$/, "")
  const api = baseUrl === undefined ? "https://api.twitch.tv" : id
  return { authorization: `${id}/oauth2/authorize`, token: `${id}/oauth2/token`, users: `${api}/helix/users`, issuer: `${api}/helix` }
}

/** GoTrue's default: without it Helix leaves `email` out of the user. */
export const TWITCH_SCOPES: ReadonlyArray<string> = ["user:read:email"]

/**
 * `GET /helix/users` (the token's own user, `{data: [user]}`) as a profile. Twitch hands out an address only under
 * user:read:email and only once the user has verified it ("Twitch returns only verified email addresses", Helix
 * reference), so an address present is a verified one.
 */
export const twitchProfile = (body: Readonly<Record<string, unknown>>, issuer: string): Either.Either<ProviderProfile, string> => {
  const data = body["data"]
  const user = Array.isArray(data) ? asObject(data[0]) : {}
  const id = stringClaim(user, "id")
  if (id === null) return Either.left("helix answered no user")
  const email = stringClaim(user, "email")
  const emailVerified = email !== null
  const login = stringClaim(user, "login")
  const name = stringClaim(user, "display_name") ?? login
  const picture = stringClaim(user, "profile_image_url")
  const claims: Record<string, unknown> = { iss: issuer, sub: id, provider_id: id, email_verified: emailVerified, phone_verified: false }
  if (email !== null) claims["email"] = email
  if (name !== null) Object.assign(claims, { name, full_name: name })
  if (login !== null) Object.assign(claims, { nickname: login, preferred_username: login, user_name: login, slug: login })
  if (picture !== null) Object.assign(claims, { picture, avatar_url: picture })
  return Either.right({ providerId: id, email, emailVerified, name, avatarUrl: picture, claims })
}

/** Twitch, or a stand-in at EXTERNAL_TWITCH_URL. */
export const twitch: ProviderDescriptor = {
  make: (config) => {
    const endpoints = twitchEndpoints(Option.getOrUndefined(config.url))
    const client = clientFor(config)
    return {
      name: "twitch",
      // Twitch documents no PKCE for its authorization code flow.
      usesPkce: false,
      authorizationUrl: authorizationUrl(client, endpoints.authorization, TWITCH_SCOPES),
      // Twitch reads the client credentials from the form body only and refuses Basic auth.
      exchange: exchangeWith(config, endpoints.token, { credentials: "body" }),
      profile: (tokens) =>
        Effect.flatMap(
          // Helix refuses a user token without the Client-Id it was issued to.
          getJson(endpoints.users, tokens.accessToken, { "client-id": redirectClientId(config) }),
          (body) => mapped(twitchProfile(asObject(body), endpoints.issuer))
        )
    }
  }
}
