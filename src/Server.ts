import { createServer } from "node:http"
import { HttpApi, HttpApiBuilder, HttpApiSwagger, HttpServer, type HttpServerResponse, OpenApi } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer } from "effect"
import type { AppConfig } from "./config/AppConfig.js"
import { AuthApi } from "./auth/Api.js"
import { authErrorMiddleware, authErrorResponse } from "./auth/http/AuthErrorMiddleware.js"
import { AuthError } from "./auth/domain/AuthError.js"
import { SettingsHttpLive } from "./auth/settings/SettingsHttp.js"
import { Signup } from "./auth/signup/Signup.js"
import { SignupHttpLive } from "./auth/signup/SignupHttp.js"
import { PasswordGrant } from "./auth/token/PasswordGrant.js"
import { TokenHttpLive } from "./auth/token/TokenHttp.js"
import { LogoutHttpLive } from "./auth/logout/LogoutHttp.js"
import { AccessTokens } from "./auth/sessions/AccessTokens.js"
import { AuthenticatedLive } from "./auth/http/AuthenticatedLive.js"
import { authPrefix } from "./auth/http/AuthPrefix.js"
import { RequestId } from "./platform/http/RequestId.js"
import { Sessions } from "./auth/sessions/Sessions.js"
import { SessionsRepo } from "./auth/sessions/SessionsRepo.js"
import { Profile } from "./auth/profile/Profile.js"
import { ProfileHttpLive } from "./auth/profile/ProfileHttp.js"
import { gotrueCorsPolicy } from "./platform/http/Cors.js"
import { edgeMiddleware } from "./platform/http/EdgeMiddleware.js"

/** The auth API's handlers over its services; the ports, database and config come from the caller. */
const AuthApiLive = HttpApiBuilder.api(AuthApi).pipe(
  Layer.provide([
    SettingsHttpLive,
    SignupHttpLive,
    TokenHttpLive,
    ProfileHttpLive.pipe(Layer.provide(AuthenticatedLive)),
    LogoutHttpLive.pipe(Layer.provide(AuthenticatedLive))
  ]),
  Layer.provide([Signup.Default, PasswordGrant.Default, AccessTokens.Default, Profile.Default, Sessions.Default, SessionsRepo.Default])
)

/** What routes added beside the auth API add to its OpenAPI document. */
export type DocumentRoutes = (spec: Record<string, any>) => Record<string, any>

/** How another product on the port answers a request to one of its paths that the edge refuses (413). */
export type EdgeRejection = (path: string, status: number) => HttpServerResponse.HttpServerResponse | undefined

/** Another product served on the auth server's port (the IAM service's /auth/... routes). */
export interface ExtraProduct<E, R> {
  /** Its routes, added via HttpApiBuilder.Router. */
  readonly routes: Layer.Layer<never, E, R>
  /** How the OpenAPI document describes them. */
  readonly document: DocumentRoutes
  /** Its own envelope for refusals at the edge; every other path gets GoTrue's. */
  readonly reject: EdgeRejection
}

/**
 * The served API as /openapi.json and /docs describe it: the contract, plus whatever the extra routes on this
 * port document. Both pages read it from the same service, so they describe the same document.
 */
const documentedApi = (document: DocumentRoutes) =>
  Layer.effect(
    HttpApi.Api,
    Effect.map(HttpApi.Api, ({ api, context }) => {
      const own = Context.getOption(api.annotations, OpenApi.Transform)
      const transform: DocumentRoutes = own._tag === "Some" ? (spec) => document(own.value(spec)) : document
      return { api: api.annotate(OpenApi.Transform, transform), context }
    })
  )

/**
 * The HTTP routes on top of any HttpServer: the auth API (at `/` and at `/auth/v1/`, where supabase-js calls it),
 * its OpenAPI document and docs page, and any other product's routes, behind the edge middleware (request id,
 * CORS, body limit, access log) and the GoTrue error boundary.
 */
export const HttpRoutesLive = <E = never, R = never>(config: AppConfig, extra?: ExtraProduct<E, R>) =>
  HttpApiBuilder.serve((app) =>
    edgeMiddleware({
      cors: gotrueCorsPolicy(config.api.corsAllowedHeaders),
      requestIdHeader: config.api.requestIdHeader,
      reject: (request, requestId, status, code, message) =>
        extra?.reject(request.url.split("?", 1)[0]!, status) ??
          authErrorResponse(request, requestId, new AuthError({ status, code, message }))
    })(Effect.flatMap(RequestId, (requestId) =>
      authPrefix((request) => authErrorResponse(request, requestId, AuthError.of(404, "not_found", "Not found")))(app)))
  ).pipe(
    Layer.provide(extra === undefined ? (Layer.empty as Layer.Layer<never, E, R>) : extra.routes),
    Layer.provide(
      Layer.merge(HttpApiSwagger.layer({ path: "/docs" }), HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })).pipe(
        Layer.provide(extra === undefined ? Layer.empty : documentedApi(extra.document))
      )
    ),
    Layer.provide(HttpApiBuilder.middleware(authErrorMiddleware)),
    Layer.provide(AuthApiLive)
  )

/** The routes served by Node on API_HOST:PORT. */
export const HttpServerLive = <E = never, R = never>(config: AppConfig, extra?: ExtraProduct<E, R>) =>
  HttpRoutesLive(config, extra).pipe(
    HttpServer.withLogAddress,
    Layer.provide(NodeHttpServer.layer(createServer, { host: config.api.host, port: config.api.port }))
  )
