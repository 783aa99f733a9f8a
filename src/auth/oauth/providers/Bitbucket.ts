import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import { profileFromFields, type ProviderProfile, stringClaim } from "../OAuthProvider.js"
import { asObject, authorizationUrl, clientFor, exchangeWith, getJson, mapped } from "../ProviderKit.js"

/**
 * Bitbucket Cloud's endpoints: the OAuth pages on bitbucket.org, the REST API 2.0 on api.bitbucket.org.
 * EXTERNAL_BITBUCKET_URL (a proxy, or a test's fake) replaces both hosts with one: OAuth under /site/oauth2, the API
 * under /2.0, as on the real hosts.
 */
export const bitbucketEndpoints = (baseUrl: string | undefined) => {
  const web = (baseUrl ?? "https://bitbucket.org").replace(/\/+$/, "")
  const api = baseUrl === undefined ? "https://api.bitbucket.org" : web
  return {
    authorization: `${web}/site/oauth2/authorize`,
    token: `${web}/site/oauth2/access_token`,
    user: `${api}/2.0/user`,
    emails: `${api}/2.0/user/emails`,
    issuer: `${api}/2.0`
  }
}

/** GoTrue's default: the account, and its addresses (which `/2.0/user` never shows). */
export const BITBUCKET_SCOPES: ReadonlyArray<string> = ["account", "email"]

export interface BitbucketEmail {
  readonly email: string
  readonly is_primary: boolean
  readonly is_confirmed: boolean
}

/** The first page of `GET /2.0/user/emails` (a paginated `values` list), keeping only well-formed entries. */
export const bitbucketEmails = (body: unknown): ReadonlyArray<BitbucketEmail> => {
  const values = asObject(body)["values"]
  return Array.isArray(values)
    ? values.filter((entry): entry is BitbucketEmail =>
      typeof entry === "object" && entry !== null && typeof entry.email === "string" && typeof entry.is_primary === "boolean" &&
      typeof entry.is_confirmed === "boolean")
    : []
}

/**
 * `GET /2.0/user` and its addresses as a profile: the primary address, verified only when Bitbucket says it is
 * confirmed. The subject is the account's `uuid` (braces and all, as GoTrue keeps it): a username can change.
 */
export const bitbucketProfile = (
  user: Readonly<Record<string, unknown>>,
  emails: ReadonlyArray<BitbucketEmail>,
  issuer: string
): Either.Either<ProviderProfile, string> => {
  const id = stringClaim(user, "uuid")
  if (id === null) return Either.left("user has no uuid")
  const primary = emails.find((entry) => entry.is_primary)
  const email = primary?.email ?? null
  const emailVerified = primary?.is_confirmed ?? false
  const name = stringClaim(user, "display_name")
  const username = stringClaim(user, "username") ?? stringClaim(user, "nickname")
  const avatar = stringClaim(asObject(asObject(user["links"])["avatar"]), "href")
  return Either.right(profileFromFields({ issuer, id, email, emailVerified, name, username, avatar }))
}

/** Bitbucket Cloud. */
export const bitbucket: ProviderDescriptor = {
  make: (config) => {
    const endpoints = bitbucketEndpoints(Option.getOrUndefined(config.url))
    const client = clientFor(config)
    return {
      name: "bitbucket",
      // Bitbucket Cloud documents no PKCE for its OAuth consumers.
      usesPkce: false,
      authorizationUrl: authorizationUrl(client, endpoints.authorization, BITBUCKET_SCOPES),
      // Bitbucket documents the consumer's key and secret in Basic auth.
      exchange: exchangeWith(config, endpoints.token),
      profile: (tokens) =>
        Effect.flatMap(
          Effect.all([getJson(endpoints.user, tokens.accessToken), getJson(endpoints.emails, tokens.accessToken)], { concurrency: 2 }),
          ([user, emails]) => mapped(bitbucketProfile(asObject(user), bitbucketEmails(emails), endpoints.issuer))
        )
    }
  }
}
