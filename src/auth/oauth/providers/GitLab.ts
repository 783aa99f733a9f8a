import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import { profileFromFields, type ProviderProfile, stringClaim } from "../OAuthProvider.js"
import { asObject, authorizationUrl, clientFor, exchangeWith, getJson, mapped } from "../ProviderKit.js"

/**
 * GitLab's OAuth and REST endpoints on one instance: EXTERNAL_GITLAB_URL, a self-managed GitLab, or else the public
 * instance https://gitlab.com (GoTrue's default); the OAuth pages are at its root and the API under /api/v4.
 */
export const gitlabEndpoints = (instanceUrl: string | undefined) => {
  const base = (instanceUrl ?? "https://gitlab.com").replace(/\/+$/, "")
  return { authorization: `${base}/oauth/authorize`, token: `${base}/oauth/token`, user: `${base}/api/v4/user`, issuer: base }
}

/** GoTrue's default: read-only access to the user's profile, which includes the primary address. */
export const GITLAB_SCOPES: ReadonlyArray<string> = ["read_user"]

/**
 * `GET /api/v4/user` as a profile: `email` is the account's primary address, verified when `confirmed_at` is set
 * (GitLab sets it once the address is confirmed; an instance with confirmation switched off sets it at sign-up,
 * its operator's choice to trust). The numeric id is the subject: a username can be renamed, an id cannot.
 */
export const gitlabProfile = (user: Readonly<Record<string, unknown>>, issuer: string): Either.Either<ProviderProfile, string> => {
  const id = typeof user["id"] === "number" || typeof user["id"] === "string" ? String(user["id"]) : ""
  if (id === "") return Either.left("user has no id")
  const email = stringClaim(user, "email")
  const emailVerified = email !== null && stringClaim(user, "confirmed_at") !== null
  const name = stringClaim(user, "name")
  const username = stringClaim(user, "username")
  const avatar = stringClaim(user, "avatar_url")
  return Either.right(profileFromFields({ issuer, id, email, emailVerified, name, username, avatar }))
}

/** GitLab.com or a self-managed instance at EXTERNAL_GITLAB_URL. */
export const gitlab: ProviderDescriptor = {
  make: (config) => {
    const endpoints = gitlabEndpoints(Option.getOrUndefined(config.url))
    const client = clientFor(config)
    return {
      name: "gitlab",
      usesPkce: true,
      authorizationUrl: authorizationUrl(client, endpoints.authorization, GITLAB_SCOPES),
      exchange: exchangeWith(config, endpoints.token, { credentials: "body" }),
      profile: (tokens) => Effect.flatMap(getJson(endpoints.user, tokens.accessToken), (user) => mapped(gitlabProfile(asObject(user), endpoints.issuer)))
    }
  }
}
