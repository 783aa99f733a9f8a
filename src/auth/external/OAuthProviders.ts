import { CodeChallengeMethod, OAuth2Client } from "arctic"
import { Context, Duration, Effect, Either, Layer, Option, Redacted } from "effect"
import { AppConfig, type OAuthProviderConfig } from "../../config/AppConfig.js"
import { OAUTH_PROVIDERS, type OAuthProviderName } from "../../config/OAuthProviders.js"
import { clientIdsOf } from "../domain/IdToken.js"
import {
  type AuthorizationRequest,
  type OAuthProvider,
  ProviderFailure,
  type ProviderProfile,
  type ProviderTokens,
  scopesWith,
  withPassThrough
} from "./OAuthProvider.js"
import { GITHUB_SCOPES, githubEmails, githubEndpoints, githubProfile } from "./providers/GitHub.js"
import { KEYCLOAK_SCOPES, keycloakEndpoints, keycloakProfile } from "./providers/Keycloak.js"

/** Why `/authorize?provider=` cannot be served, in GoTrue's words (after its "Unsupported provider: "). */
export type Unavailable = { readonly _tag: "Unknown"; readonly name: string } | { readonly _tag: "Disabled" }

/** The external identity providers, by name: the port every OAuth sign-in goes through. */
export class OAuthProviders extends Context.Tag("auth/OAuthProviders")<OAuthProviders, {
  readonly lookup: (name: string) => Either.Either<OAuthProvider, Unavailable>
}>() {}

const PROVIDER_TIMEOUT = Duration.seconds(10)

/** An error's message and its causes' (arctic wraps fetch's failure, which wraps the socket's). */
const reasonOf = (cause: unknown): string =>
  cause instanceof Error ? [cause.message, ...(cause.cause === undefined ? [] : [reasonOf(cause.cause)])].join(": ") : String(cause)

const asObject = (body: unknown): Readonly<Record<string, unknown>> =>
  typeof body === "object" && body !== null && !Array.isArray(body) ? body as Record<string, unknown> : {}

/**
 * The code exchange (RFC 6749 §4.1.3), client credentials in Basic auth. Sent with fetch rather than arctic's
 * sender, whose hand-set Content-Length the HTTP client of @effect/platform-node's undici refuses. An `error` in a
 * 200 answer is a refusal too: GitHub answers a bad code that way.
 */
const exchangeWith = (config: OAuthProviderConfig, tokenUrl: string) => (code: string, codeVerifier: string | null) =>
  Effect.tryPromise({
    try: async (signal): Promise<ProviderTokens> => {
      const form = new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: config.redirectUri })
      if (codeVerifier !== null) form.set("code_verifier", codeVerifier)
      const secret = Option.match(config.secret, { onNone: () => "", onSome: Redacted.value })
      const credentials = Buffer.from(`${encodeURIComponent(redirectClientId(config))}:${encodeURIComponent(secret)}`).toString("base64")
      const response = await fetch(tokenUrl, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json", authorization: `Basic ${credentials}` },
        body: form.toString(),
        signal
      })
      const body = asObject(await response.json().catch(() => undefined))
      if (!response.ok || typeof body["error"] === "string") {
        throw new Error(`token endpoint answered ${response.status} ${typeof body["error"] === "string" ? body["error"] : ""}`.trim())
      }
      if (typeof body["access_token"] !== "string" || body["access_token"] === "") throw new Error("no access_token")
      return {
        accessToken: body["access_token"],
        refreshToken: typeof body["refresh_token"] === "string" && body["refresh_token"] !== "" ? body["refresh_token"] : null
      }
    },
    catch: (cause) => new ProviderFailure({ step: "exchange", reason: reasonOf(cause) })
  }).pipe(Effect.timeoutFail({ duration: PROVIDER_TIMEOUT, onTimeout: () => new ProviderFailure({ step: "exchange", reason: "timed out" }) }))

/** A GET of a JSON resource with the user's access token. */
const getJson = (url: string, accessToken: string, headers: Record<string, string> = {}) =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(url, { headers: { authorization: `Bearer ${accessToken}`, accept: "application/json", ...headers }, signal })
      if (!response.ok) throw new Error(`${url} answered ${response.status}`)
      return (await response.json()) as unknown
    },
    catch: (cause) => new ProviderFailure({ step: "profile", reason: reasonOf(cause) })
  }).pipe(Effect.timeoutFail({ duration: PROVIDER_TIMEOUT, onTimeout: () => new ProviderFailure({ step: "profile", reason: "timed out" }) }))

const mapped = (result: Either.Either<ProviderProfile, string>) =>
  Either.mapLeft(result, (reason) => new ProviderFailure({ step: "profile", reason }))

/**
 * The client id the redirect flow uses: the first when several are configured (comma-separated, so an ID token of
 * a native app's other client id is accepted too), as GoTrue does.
 */
const redirectClientId = (config: OAuthProviderConfig): string => clientIdsOf(config.clientId)[0] ?? ""

const clientFor = (config: OAuthProviderConfig) =>
  new OAuth2Client(redirectClientId(config), Option.match(config.secret, { onNone: () => null, onSome: Redacted.value }), config.redirectUri)

const authorizationUrl = (client: OAuth2Client, endpoint: string, defaults: ReadonlyArray<string>) =>
  ({ codeVerifier, extraScopes, passThrough, state }: AuthorizationRequest): URL => {
    const scopes = [...scopesWith(defaults, extraScopes)]
    return withPassThrough(
      codeVerifier === null
        ? client.createAuthorizationURL(endpoint, state, scopes)
        : client.createAuthorizationURLWithPKCE(endpoint, state, CodeChallengeMethod.S256, codeVerifier, scopes),
      passThrough
    )
  }

const keycloak = (config: OAuthProviderConfig): OAuthProvider => {
  const realm = Option.getOrElse(config.url, () => "")
  const endpoints = keycloakEndpoints(realm)
  const client = clientFor(config)
  return {
    name: "keycloak",
    usesPkce: true,
    authorizationUrl: authorizationUrl(client, endpoints.authorization, KEYCLOAK_SCOPES),
    exchange: exchangeWith(config, endpoints.token),
    profile: (tokens) =>
      Effect.flatMap(getJson(endpoints.userinfo, tokens.accessToken), (userinfo) => mapped(keycloakProfile(asObject(userinfo), realm)))
  }
}

const github = (config: OAuthProviderConfig): OAuthProvider => {
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

/** The providers implemented so far; the others are configured (and listed in /settings) but not served yet. */
const IMPLEMENTED: Partial<Record<OAuthProviderName, (config: OAuthProviderConfig) => OAuthProvider>> = { keycloak, github }

const isProviderName = (name: string): name is OAuthProviderName => (OAUTH_PROVIDERS as ReadonlyArray<string>).includes(name)

/** The providers as configured (start-up validation guarantees an enabled one has what it needs). */
export const OAuthProvidersLive = Layer.effect(
  OAuthProviders,
  Effect.map(AppConfig, (config) => {
    const built = new Map<string, OAuthProvider>()
    for (const [name, make] of Object.entries(IMPLEMENTED)) {
      const settings = config.external[name as OAuthProviderName]
      if (settings.enabled && make !== undefined) built.set(name, make(settings))
    }
    return {
      lookup: (name) => {
        const provider = built.get(name)
        if (provider !== undefined) return Either.right(provider)
        return isProviderName(name) && name in IMPLEMENTED ? Either.left({ _tag: "Disabled" }) : Either.left({ _tag: "Unknown", name })
      }
    }
  })
)

/** Given providers, by name, as if enabled: for tests that script what a provider answers. */
export const OAuthProvidersTest = (providers: ReadonlyArray<OAuthProvider>) =>
  Layer.succeed(OAuthProviders, {
    lookup: (name) => {
      const provider = providers.find((p) => p.name === name)
      return provider === undefined ? Either.left({ _tag: "Unknown", name }) : Either.right(provider)
    }
  })
