import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import { profileFromFields, type ProviderProfile, stringClaim } from "../OAuthProvider.js"
import { asObject, authorizationUrl, clientFor, exchangeWith, mapped } from "../ProviderKit.js"

/** Notion's public-integration OAuth under https://api.notion.com/v1, or under EXTERNAL_NOTION_URL, which replaces the origin. */
export const notionEndpoints = (baseUrl: string | undefined) => {
  const api = `${(baseUrl ?? "https://api.notion.com").replace(/\/+$/, "")}/v1`
  return { authorization: `${api}/oauth/authorize`, token: `${api}/oauth/token`, issuer: api }
}

/**
 * The token endpoint's answer as a profile: Notion names the authorizing user there (`owner.user`), so there is no
 * separate profile call. Notion does not say whether `person.email` was ever verified, so it is treated as
 * unverified. An integration owned by a workspace (no user) cannot sign anyone in.
 */
export const notionProfile = (token: Readonly<Record<string, unknown>>, issuer: string): Either.Either<ProviderProfile, string> => {
  const owner = asObject(token["owner"])
  if (owner["type"] !== "user") return Either.left("the token's owner is not a user")
  const user = asObject(owner["user"])
  const id = stringClaim(user, "id")
  if (id === null) return Either.left("the token's owner has no id")
  const email = stringClaim(asObject(user["person"]), "email")
  const name = stringClaim(user, "name")
  const avatar = stringClaim(user, "avatar_url")
  const workspace = Object.fromEntries(
    ["workspace_id", "workspace_name"].flatMap((key) => {
      const value = stringClaim(token, key)
      return value === null ? [] : [[key, value]]
    })
  )
  return Either.right(profileFromFields({ issuer, id, email, emailVerified: false, name, avatar, customClaims: workspace }))
}

/** Notion, against Notion or EXTERNAL_NOTION_URL. */
export const notion: ProviderDescriptor = {
  make: (config) => {
    const endpoints = notionEndpoints(Option.getOrUndefined(config.url))
    // Notion has no scopes: what the integration may read is chosen on its consent page.
    const authorize = authorizationUrl(clientFor(config), endpoints.authorization, [])
    return {
      name: "notion",
      usesPkce: false,
      // `owner=user` asks for a user's token; placed first, an app's own `owner` never replaces it.
      authorizationUrl: (request) => authorize({ ...request, passThrough: [["owner", "user"], ...request.passThrough] }),
      // Notion documents Basic auth and a JSON body for its token endpoint.
      exchange: exchangeWith(config, endpoints.token, { encoding: "json" }),
      profile: (tokens) => mapped(notionProfile(tokens.raw ?? {}, endpoints.issuer))
    }
  }
}
