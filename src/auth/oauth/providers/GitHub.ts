import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ProviderDescriptor } from "../ProviderDescriptor.js"
import { asObject, authorizationUrl, clientFor, exchangeWith, getJson, mapped } from "../ProviderKit.js"
import * as Either from "effect/Either"
import { profileFromFields, type ProviderProfile } from "../OAuthProvider.js"

/**
 * GitHub's OAuth endpoints: github.com and api.github.com, or a GitHub Enterprise Server at EXTERNAL_GITHUB_URL,
 * which serves both from one host with the API under /api/v3.
 */
export const githubEndpoints = (baseUrl: string | undefined) => {
  const web = (baseUrl ?? "https://github.com").replace(/\/+$/, "")
  const api = baseUrl === undefined ? "https://api.github.com" : `${web}/api/v3`
  return {
    authorization: `${web}/login/oauth/authorize`,
    token: `${web}/login/oauth/access_token`,
    user: `${api}/user`,
    emails: `${api}/user/emails`,
    issuer: api
  }
}

/** GoTrue's default: the addresses, including private ones, come only with this scope. */
export const GITHUB_SCOPES: ReadonlyArray<string> = ["user:email"]

export interface GitHubEmail {
  readonly email: string
  readonly primary: boolean
  readonly verified: boolean
}

/** `GET /user/emails`, keeping only well-formed entries. */
export const githubEmails = (body: unknown): ReadonlyArray<GitHubEmail> =>
  Array.isArray(body)
    ? body.filter((entry): entry is GitHubEmail =>
      typeof entry === "object" && entry !== null && typeof entry.email === "string" && typeof entry.primary === "boolean" &&
      typeof entry.verified === "boolean")
    : []

/**
 * `GET /user` and `GET /user/emails` as a profile: the primary address, verified only when GitHub says so. The
 * numeric id is the subject (a login can be renamed, an id cannot).
 */
export const githubProfile = (
  user: Readonly<Record<string, unknown>>,
  emails: ReadonlyArray<GitHubEmail>,
  issuer: string
): Either.Either<ProviderProfile, string> => {
  const id = typeof user["id"] === "number" || typeof user["id"] === "string" ? String(user["id"]) : ""
  if (id === "") return Either.left("user has no id")
  const primary = emails.find((entry) => entry.primary)
  const email = primary?.email ?? null
  const emailVerified = primary?.verified ?? false
  const text = (key: string) => typeof user[key] === "string" && user[key] !== "" ? user[key] as string : null
  const name = text("name")
  const login = text("login")
  const avatar = text("avatar_url")
  return Either.right(profileFromFields({ issuer, id, email, emailVerified, name, username: login, avatar }))
}

/** GitHub, or a GitHub Enterprise Server at EXTERNAL_GITHUB_URL. */
export const github: ProviderDescriptor = {
  make: (config) => {
    const endpoints = githubEndpoints(Option.getOrUndefined(config.url))
    const client = clientFor(config)
    // GitHub refuses API calls without a User-Agent, and the media type pins the API version.
    const api = { accept: "application/vnd.github+json", "user-agent": "gatehouse" }
    return {
      name: "github",
      // GitHub accepts a PKCE challenge on OAuth apps and GitHub apps alike.
      usesPkce: true,
      authorizationUrl: authorizationUrl(client, endpoints.authorization, GITHUB_SCOPES),
      exchange: exchangeWith(config, endpoints.token),
      profile: (tokens) =>
        Effect.flatMap(
          Effect.all([getJson(endpoints.user, tokens.accessToken, api), getJson(endpoints.emails, tokens.accessToken, api)], {
            concurrency: 2
          }),
          ([user, emails]) => mapped(githubProfile(asObject(user), githubEmails(emails), endpoints.issuer))
        )
    }
  }
}
