import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { AuthConfig } from "../../config/AuthConfig.js"
import { CurrentUser } from "../contract/CurrentUser.js"
import { AuthError } from "../domain/AuthError.js"
import { pagingHeaders, parsePage } from "../domain/Pagination.js"
import { RateLimits } from "../limits/RateLimits.js"
import { OAuthServer } from "./OAuthServer.js"
import { OAuthServerApi } from "./OAuthServerApi.js"
import { oauthServerDisabled } from "./OAuthServerEnabled.js"
import { TokenIntrospection } from "./TokenIntrospection.js"

const withHeaders = (headers: Record<string, string>) =>
  HttpApp.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeaders(response, headers)))

const origin = Effect.map(HttpServerRequest.HttpServerRequest, (request) => request.headers["origin"])

/** The request as the token endpoint and introspection read it: the body by its own Content-Type, not as JSON. */
const rawTokenRequest = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  // A body past the edge's limit is its 413, as everywhere (the error boundary reads the defect).
  const body = yield* Effect.orDie(request.text)
  const query = request.url.includes("?") ? request.url.slice(request.url.indexOf("?") + 1) : ""
  return { authorization: request.headers["authorization"], contentType: request.headers["content-type"] ?? "", body, query }
})

export const OAuthDiscoveryHttpLive = HttpApiBuilder.group(OAuthServerApi, "oauthDiscovery", (handlers) =>
  Effect.gen(function*() {
    const server = yield* OAuthServer
    const config = yield* AuthConfig
    const cached = withHeaders({ "cache-control": "public, max-age=600" })
    return handlers
      .handle("openidConfiguration", () => Effect.as(cached, server.metadata()))
      .handle("authorizationServer", () =>
        config.oauthServer.enabled ? Effect.as(cached, server.metadata()) : Effect.fail(oauthServerDisabled()))
  }))

export const OAuthServerHttpLive = HttpApiBuilder.group(OAuthServerApi, "oauthServer", (handlers) =>
  Effect.gen(function*() {
    const server = yield* OAuthServer
    const config = yield* AuthConfig
    const limits = yield* RateLimits
    return handlers
      .handle("authorize", ({ urlParams }) =>
        Effect.map(
          Effect.zipRight(limits.check("oauth_authorize"), server.authorize({
            client_id: urlParams.client_id ?? "",
            redirect_uri: urlParams.redirect_uri ?? "",
            response_type: urlParams.response_type ?? "",
            scope: urlParams.scope ?? "",
            state: urlParams.state ?? "",
            resource: urlParams.resource ?? "",
            code_challenge: urlParams.code_challenge ?? "",
            code_challenge_method: urlParams.code_challenge_method ?? "",
            nonce: urlParams.nonce ?? ""
          })),
          (location) => HttpServerResponse.redirect(location, { status: 302 })
        ))
      .handle("token", () =>
        Effect.gen(function*() {
          const answer = yield* server.token(yield* rawTokenRequest)
          yield* withHeaders({ "cache-control": "no-store" })
          return answer
        }))
      .handle("userinfo", () => Effect.flatMap(CurrentUser, ({ sessionId, user }) => server.userInfo(user, sessionId)))
      .handle("authorizationDetails", ({ path }) =>
        Effect.flatMap(CurrentUser, ({ user }) => Effect.flatMap(origin, (o) => server.details(user, path.authorization_id, o))))
      .handle("consent", ({ path, payload }) =>
        Effect.flatMap(CurrentUser, ({ user }) => Effect.flatMap(origin, (o) => server.consent(user, path.authorization_id, payload, o))))
      .handle("register", ({ payload }) =>
        Effect.gen(function*() {
          yield* limits.check("oauth_client_register")
          if (!config.oauthServer.allowDynamicRegistration) {
            return yield* AuthError.of(403, "oauth_dynamic_client_registration_disabled", "Dynamic client registration is not enabled")
          }
          return yield* server.register(payload, "dynamic")
        }))
  }))

/**
 * POST /oauth/introspect, served whether or not the OAuth server is on (the service role may always ask). Raw: the
 * declared form documents the body, which the service reads itself (client credentials may be in it).
 */
export const OAuthIntrospectionHttpLive = HttpApiBuilder.group(OAuthServerApi, "oauthIntrospection", (handlers) =>
  Effect.gen(function*() {
    const introspection = yield* TokenIntrospection
    return handlers.handleRaw("introspect", () =>
      Effect.gen(function*() {
        const request = yield* rawTokenRequest
        yield* withHeaders({ "cache-control": "no-store" })
        return yield* introspection.introspect(request).pipe(
          // RFC 6749 §5.2: a caller that tried an Authorization scheme and failed is challenged in that scheme.
          Effect.tapError((error) => {
            const scheme = /^(basic|bearer)\s/i.exec(request.authorization ?? "")?.[1]
            return error.status === 401 && scheme !== undefined
              ? withHeaders({ "www-authenticate": `${scheme[0]!.toUpperCase()}${scheme.slice(1).toLowerCase()} realm="gatehouse"` })
              : Effect.void
          })
        )
      }))
  }))

export const OAuthGrantsHttpLive = HttpApiBuilder.group(OAuthServerApi, "oauthGrants", (handlers) =>
  Effect.gen(function*() {
    const server = yield* OAuthServer
    return handlers
      .handle("listGrants", () => Effect.flatMap(CurrentUser, ({ user }) => server.grants(user)))
      .handle("revokeGrant", ({ urlParams }) => Effect.flatMap(CurrentUser, ({ user }) => server.revokeGrant(user, urlParams.client_id ?? "")))
  }))

export const AdminOAuthClientsHttpLive = HttpApiBuilder.group(OAuthServerApi, "adminOAuthClients", (handlers) =>
  Effect.gen(function*() {
    const server = yield* OAuthServer
    return handlers
      .handle("createClient", ({ payload }) => server.register(payload, "manual"))
      .handle("listClients", ({ urlParams }) =>
        Effect.gen(function*() {
          const paged = (urlParams.page ?? "") !== "" || (urlParams.per_page ?? "") !== ""
          if (!paged) return { clients: (yield* server.listClients(undefined)).clients }
          const page = yield* Either.mapLeft(parsePage(urlParams.page, urlParams.per_page), AuthError.validation)
          const found = yield* server.listClients(page)
          const request = yield* HttpServerRequest.HttpServerRequest
          yield* withHeaders(pagingHeaders(request.originalUrl, page, found.total))
          return { clients: found.clients }
        }))
      .handle("getClient", ({ path }) => server.getClient(path.client_id))
      .handle("updateClient", ({ path, payload }) => server.updateClient(path.client_id, payload))
      .handle("deleteClient", ({ path }) => server.deleteClient(path.client_id))
      .handle("regenerateSecret", ({ path }) => server.regenerateSecret(path.client_id))
  }))
