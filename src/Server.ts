import { createServer } from "node:http"
import { HttpApiBuilder, HttpApiSwagger, HttpServer, type HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Layer } from "effect"
import type { AppConfig } from "./config/AppConfig.js"
import { AuthApi } from "./auth/Api.js"
import { authErrorMiddleware, authErrorResponse } from "./auth/http/AuthErrorMiddleware.js"
import { AuthError } from "./auth/domain/AuthError.js"
import { SystemHttpLive } from "./auth/system/SystemHttp.js"
import { Accounts } from "./auth/accounts/Accounts.js"
import { AccountsHttpLive } from "./auth/accounts/AccountsHttp.js"
import { AuthenticatedLive } from "./auth/http/AuthenticatedLive.js"
import { Sessions } from "./auth/sessions/Sessions.js"
import { Profile } from "./auth/user/Profile.js"
import { UserHttpLive } from "./auth/user/UserHttp.js"
import { Users } from "./auth/users/Users.js"
import { gotrueCorsPolicy } from "./platform/http/Cors.js"
import { edgeMiddleware } from "./platform/http/EdgeMiddleware.js"

/** The auth API's handlers over its services; the ports, database and config come from the caller. */
const AuthApiLive = HttpApiBuilder.api(AuthApi).pipe(
  Layer.provide([SystemHttpLive, AccountsHttpLive, UserHttpLive.pipe(Layer.provide(AuthenticatedLive))]),
  Layer.provide([Accounts.Default, Profile.Default, Sessions.Default, Users.Default])
)

/** How another product on the port answers a request to one of its paths that the edge refuses (413). */
export type EdgeRejection = (path: string, status: number) => HttpServerResponse.HttpServerResponse | undefined

/**
 * The HTTP routes on top of any HttpServer: the auth API, its OpenAPI document and docs page, behind the edge
 * middleware (request id, CORS, body limit, access log) and the GoTrue error boundary.
 */
export const HttpRoutesLive = <E = never, R = never>(
  config: AppConfig,
  /** Routes another product adds on this port (the IAM service's /auth/... routes), via HttpApiBuilder.Router. */
  extraRoutes: Layer.Layer<never, E, R> = Layer.empty as Layer.Layer<never, E, R>,
  /** Its own envelope for refusals at the edge; every other path gets GoTrue's. */
  extraRejection: EdgeRejection = () => undefined
) =>
  HttpApiBuilder.serve(edgeMiddleware({
    cors: gotrueCorsPolicy(config.api.corsAllowedHeaders),
    requestIdHeader: config.api.requestIdHeader,
    reject: (request, requestId, status, code, message) =>
      extraRejection(request.url.split("?", 1)[0]!, status) ??
        authErrorResponse(request, requestId, new AuthError({ status, code, message }))
  })).pipe(
    Layer.provide(extraRoutes),
    Layer.provide(HttpApiSwagger.layer({ path: "/docs" })),
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
    Layer.provide(HttpApiBuilder.middleware(authErrorMiddleware)),
    Layer.provide(AuthApiLive)
  )

/** The routes served by Node on API_HOST:PORT. */
export const HttpServerLive = <E = never, R = never>(
  config: AppConfig,
  extraRoutes: Layer.Layer<never, E, R> = Layer.empty as Layer.Layer<never, E, R>,
  extraRejection?: EdgeRejection
) =>
  HttpRoutesLive(config, extraRoutes, extraRejection).pipe(
    HttpServer.withLogAddress,
    Layer.provide(NodeHttpServer.layer(createServer, { host: config.api.host, port: config.api.port }))
  )
