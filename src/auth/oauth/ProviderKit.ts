import { CodeChallengeMethod, OAuth2Client } from "arctic"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type { OAuthProviderConfig } from "../../config/AuthConfig.js"
import type { AuthError } from "../domain/AuthError.js"
import type { ExternalProfile } from "../domain/ExternalLink.js"
import { clientIdsOf } from "../domain/IdToken.js"
import { type IdTokenExpectations, verifyIdToken } from "./IdTokenVerifier.js"
import {
  type AuthorizationRequest,
  ProviderFailure,
  type ProviderProfile,
  type ProviderTokens,
  scopesWith,
  withPassThrough
} from "./OAuthProvider.js"

/*
 * What every provider's wiring is made of: the code exchange, JSON fetches with the user's token, the
 * authorization URL, the ID token its token endpoint sent. A provider's descriptor (providers/X.ts) combines them
 * with its endpoints and profile mapping.
 */

export const PROVIDER_TIMEOUT = Duration.seconds(10)

/** An error's message and its causes' (arctic wraps fetch's failure, which wraps the socket's). */
export const reasonOf = (cause: unknown): string =>
  cause instanceof Error ? [cause.message, ...(cause.cause === undefined ? [] : [reasonOf(cause.cause)])].join(": ") : String(cause)

export const asObject = (body: unknown): Readonly<Record<string, unknown>> =>
  typeof body === "object" && body !== null && !Array.isArray(body) ? body as Record<string, unknown> : {}

export interface ExchangeOptions {
  /** Where the client credentials go: Basic auth (the default), or the body for providers that take only that. */
  readonly credentials?: "basic" | "body"
  /** How the body is encoded: a form (RFC 6749), or JSON where that is all the provider documents (Notion). */
  readonly encoding?: "form" | "json"
}

/**
 * The code exchange (RFC 6749 §4.1.3), client credentials in Basic auth unless the options say otherwise. Sent with
 * fetch rather than arctic's sender, whose hand-set Content-Length the HTTP client of @effect/platform-node's undici
 * refuses. An `error` in a 200 answer is a refusal too: GitHub answers a bad code that way, and Slack with
 * `ok: false`. Credentials go in the body for Apple, Google, Microsoft, GitLab, LinkedIn, Facebook, Slack, Twitch and WorkOS.
 */
export const exchangeWith = (config: OAuthProviderConfig, tokenUrl: string, options: ExchangeOptions = {}) =>
(code: string, codeVerifier: string | null) =>
  Effect.tryPromise({
    try: async (signal): Promise<ProviderTokens> => {
      const fields: Record<string, string> = { grant_type: "authorization_code", code, redirect_uri: config.redirectUri }
      if (codeVerifier !== null) fields["code_verifier"] = codeVerifier
      const secret = Option.match(config.secret, { onNone: () => "", onSome: Redacted.value })
      const headers: Record<string, string> = { accept: "application/json" }
      if (options.credentials === "body") {
        fields["client_id"] = redirectClientId(config)
        fields["client_secret"] = secret
      } else {
        headers["authorization"] = `Basic ${Buffer.from(`${encodeURIComponent(redirectClientId(config))}:${encodeURIComponent(secret)}`).toString("base64")}`
      }
      const json = options.encoding === "json"
      headers["content-type"] = json ? "application/json" : "application/x-www-form-urlencoded"
      const response = await fetch(tokenUrl, {
        method: "POST",
        headers,
        body: json ? JSON.stringify(fields) : new URLSearchParams(fields).toString(),
        signal
      })
      const body = asObject(await response.json().catch(() => undefined))
      if (!response.ok || typeof body["error"] === "string" || body["ok"] === false) {
        throw new Error(`token endpoint answered ${response.status} ${typeof body["error"] === "string" ? body["error"] : ""}`.trim())
      }
      if (typeof body["access_token"] !== "string" || body["access_token"] === "") throw new Error("no access_token")
      return {
        accessToken: body["access_token"],
        refreshToken: typeof body["refresh_token"] === "string" && body["refresh_token"] !== "" ? body["refresh_token"] : null,
        raw: body,
        idToken: typeof body["id_token"] === "string" && body["id_token"] !== "" ? body["id_token"] : null
      }
    },
    catch: (cause) => new ProviderFailure({ step: "exchange", reason: reasonOf(cause) })
  }).pipe(Effect.timeoutFail({ duration: PROVIDER_TIMEOUT, onTimeout: () => new ProviderFailure({ step: "exchange", reason: "timed out" }) }))

/** A GET of a JSON resource with the user's access token. */
export const getJson = (url: string, accessToken: string, headers: Record<string, string> = {}) =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(url, { headers: { authorization: `Bearer ${accessToken}`, accept: "application/json", ...headers }, signal })
      if (!response.ok) throw new Error(`${url} answered ${response.status}`)
      return (await response.json()) as unknown
    },
    catch: (cause) => new ProviderFailure({ step: "profile", reason: reasonOf(cause) })
  }).pipe(Effect.timeoutFail({ duration: PROVIDER_TIMEOUT, onTimeout: () => new ProviderFailure({ step: "profile", reason: "timed out" }) }))

export const mapped = (result: Either.Either<ProviderProfile, string>) =>
  Either.mapLeft(result, (reason) => new ProviderFailure({ step: "profile", reason }))

/**
 * The client id the redirect flow uses: the first when several are configured (comma-separated, so an ID token of
 * a native app's other client id is accepted too), as GoTrue does.
 */
export const redirectClientId = (config: OAuthProviderConfig): string => clientIdsOf(config.clientId)[0] ?? ""

export const clientFor = (config: OAuthProviderConfig) =>
  new OAuth2Client(redirectClientId(config), Option.match(config.secret, { onNone: () => null, onSome: Redacted.value }), config.redirectUri)

export const authorizationUrl = (client: OAuth2Client, endpoint: string, defaults: ReadonlyArray<string>) =>
  ({ codeVerifier, extraScopes, passThrough, state }: AuthorizationRequest): URL => {
    const scopes = [...scopesWith(defaults, extraScopes)]
    return withPassThrough(
      codeVerifier === null
        ? client.createAuthorizationURL(endpoint, state, scopes)
        : client.createAuthorizationURLWithPKCE(endpoint, state, CodeChallengeMethod.S256, codeVerifier, scopes),
      passThrough
    )
  }

/**
 * The ID token a provider's token endpoint handed back: for providers whose profile is that token (apple, azure),
 * and keycloak's, which vouches for the userinfo answer. Verified by the verifier POST /token?grant_type=id_token
 * uses, to our client id; its claims, or a failure of the profile step.
 */
export const verifiedIdToken = (
  idToken: string | null | undefined,
  expect: Omit<IdTokenExpectations, "requiredClaims" | "audience"> & { readonly audience: string }
): Effect.Effect<Readonly<Record<string, unknown>>, ProviderFailure> =>
  idToken === null || idToken === undefined || idToken === ""
    ? Effect.fail(new ProviderFailure({ step: "profile", reason: "the token endpoint sent no id_token" }))
    : verifyIdToken(idToken, { ...expect, requiredClaims: ["exp", "sub"] }).pipe(
      Effect.map(({ claims }) => claims),
      Effect.mapError(({ reason }) => new ProviderFailure({ step: "profile", reason: `id_token: ${reason}` })),
      Effect.timeoutFail({ duration: PROVIDER_TIMEOUT, onTimeout: () => new ProviderFailure({ step: "profile", reason: "timed out" }) })
    )

/** The ID-token grant's profile (absent fields) as a provider's profile (null fields). */
export const asProviderProfile = (result: Either.Either<ExternalProfile, AuthError>): Either.Either<ProviderProfile, string> =>
  Either.match(result, {
    onLeft: (error) => Either.left(error.message),
    onRight: (profile) =>
      Either.right({
        providerId: profile.providerId,
        email: profile.email ?? null,
        emailVerified: profile.email !== undefined && profile.emailVerified,
        name: profile.name ?? null,
        avatarUrl: profile.avatarUrl ?? null,
        claims: profile.claims
      })
  })
