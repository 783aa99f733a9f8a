import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import { type ProviderProfile, stringClaim } from "../OAuthProvider.js"
import { asObject, authorizationUrl, clientFor, exchangeWith, getJson, mapped } from "../ProviderKit.js"

/**
 * Discord's OAuth2 endpoints, all under https://discord.com (the OAuth pages and the REST API alike), or under
 * EXTERNAL_DISCORD_URL, which replaces that origin. Avatars stay on Discord's CDN.
 */
export const discordEndpoints = (baseUrl: string | undefined) => {
  const api = `${(baseUrl ?? "https://discord.com").replace(/\/+$/, "")}/api`
  return { authorization: `${api}/oauth2/authorize`, token: `${api}/oauth2/token`, user: `${api}/users/@me`, issuer: api }
}

/** GoTrue's default: `identify` for the user, `email` for the address and its `verified` flag. */
export const DISCORD_SCOPES: ReadonlyArray<string> = ["email", "identify"]

const CDN = "https://cdn.discordapp.com"

/**
 * The user's avatar on Discord's CDN: the uploaded one by its hash (animated ones, hashed `a_…`, as GIF), else
 * Discord's default avatar, chosen as Discord does: by the id for users on unique usernames (discriminator "0"),
 * by the legacy discriminator otherwise.
 */
export const discordAvatarUrl = (id: string, avatar: string | null, discriminator: string | null): string => {
  if (avatar !== null) return `${CDN}/avatars/${id}/${avatar}.${avatar.startsWith("a_") ? "gif" : "png"}`
  const legacy = discriminator !== null && discriminator !== "0" ? Number.parseInt(discriminator, 10) : Number.NaN
  const index = Number.isNaN(legacy) ? Number((BigInt(/^\d+$/.test(id) ? id : "0") >> 22n) % 6n) : legacy % 5
  return `${CDN}/embed/avatars/${index}.png`
}

/**
 * `GET /users/@me` as a profile. The address is verified only when Discord's `verified` flag says so (an account
 * can hold an address it never confirmed). The display name (`global_name`) is the name when set, else the
 * username.
 */
export const discordProfile = (user: Readonly<Record<string, unknown>>, issuer: string): Either.Either<ProviderProfile, string> => {
  const id = stringClaim(user, "id")
  if (id === null) return Either.left("user has no id")
  const email = stringClaim(user, "email")
  const emailVerified = email !== null && user["verified"] === true
  const username = stringClaim(user, "username")
  const globalName = stringClaim(user, "global_name")
  const name = globalName ?? username
  const avatarUrl = discordAvatarUrl(id, stringClaim(user, "avatar"), stringClaim(user, "discriminator"))
  const claims: Record<string, unknown> = {
    iss: issuer,
    sub: id,
    provider_id: id,
    email_verified: emailVerified,
    phone_verified: false,
    picture: avatarUrl,
    avatar_url: avatarUrl
  }
  if (email !== null) claims["email"] = email
  if (name !== null) Object.assign(claims, { name, full_name: name })
  if (username !== null) Object.assign(claims, { preferred_username: username, user_name: username })
  if (globalName !== null) claims["custom_claims"] = { global_name: globalName }
  return Either.right({ providerId: id, email, emailVerified, name, avatarUrl, claims })
}

/** Discord, at discord.com or at EXTERNAL_DISCORD_URL. */
export const discord: ProviderDescriptor = {
  make: (config) => {
    const endpoints = discordEndpoints(Option.getOrUndefined(config.url))
    return {
      name: "discord",
      // Discord takes an S256 challenge on the authorization URL and checks the verifier at the token endpoint.
      usesPkce: true,
      authorizationUrl: authorizationUrl(clientFor(config), endpoints.authorization, DISCORD_SCOPES),
      exchange: exchangeWith(config, endpoints.token),
      profile: (tokens) =>
        Effect.flatMap(getJson(endpoints.user, tokens.accessToken), (user) => mapped(discordProfile(asObject(user), endpoints.issuer)))
    }
  }
}
