import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import type { HttpProduct } from "../platform/http/HttpEdge.js"
import { lazyModule } from "../platform/LazyModule.js"
import { RequestId } from "../platform/http/RequestId.js"
import { documentRouteOverlaps } from "../platform/http/RouteOverlaps.js"
import { routeMethods, routesOf } from "../platform/http/RouteMethods.js"
import { AuthApi } from "./Api.js"
import { AuthHousekeeping } from "./AuthHousekeeping.js"
import { AuthError } from "./domain/AuthError.js"
import { documentAuthApi } from "./http/AuthApiDocs.js"
import { authErrorMiddleware, authErrorResponse } from "./http/AuthErrorMiddleware.js"
import { authPrefix } from "./http/AuthPrefix.js"
import { AdminLive } from "./admin/AdminLive.js"
import { ExternalLive } from "./external/ExternalLive.js"
import { InviteLive } from "./invite/InviteLive.js"
import { RateLimits } from "./limits/RateLimits.js"
import { LogoutLive } from "./logout/LogoutLive.js"
import { MfaLive } from "./mfa/MfaLive.js"
import { OAuthServerLive } from "./oauthserver/OAuthServerLive.js"
import { OtpLive } from "./otp/OtpLive.js"
import { PasskeysLive } from "./passkeys/PasskeysLive.js"
import { getUserHotRoute } from "./profile/GetUserHotRoute.js"
import { ProfileLive } from "./profile/ProfileLive.js"
import { refreshHotRoute } from "./token/RefreshHotRoute.js"
import { RecoverLive } from "./recover/RecoverLive.js"
import { ResendLive } from "./resend/ResendLive.js"
import { AccessTokens } from "./sessions/AccessTokens.js"
import { Sessions } from "./sessions/Sessions.js"
import { SessionsRepo } from "./sessions/SessionsRepo.js"
import { SettingsLive } from "./settings/SettingsLive.js"
import { SignupLive } from "./signup/SignupLive.js"
import { SsoLive } from "./sso/SsoLive.js"
import { TokenLive } from "./token/TokenLive.js"
import { UserSessionsLive } from "./usersessions/UserSessionsLive.js"
import { AuditLog } from "./users/AuditLog.js"
import { AuditLogRepo } from "./users/AuditLogRepo.js"
import { VerifyLive } from "./verify/VerifyLive.js"

/**
 * The auth API's handlers: one layer per feature, each with its own services and middleware, and below them the
 * shared floors several features use (each built once: a layer is memoized by reference within one build). The
 * ports, database and config come from the caller.
 */
const AuthApiLive = HttpApiBuilder.api(AuthApi).pipe(
  Layer.provide([
    SettingsLive,
    SignupLive,
    TokenLive,
    VerifyLive,
    ExternalLive,
    OtpLive,
    SsoLive,
    RecoverLive,
    ResendLive,
    ProfileLive,
    LogoutLive,
    UserSessionsLive,
    MfaLive,
    AdminLive,
    InviteLive,
    PasskeysLive,
    OAuthServerLive
  ]),
  Layer.provide([
    RateLimits.Default,
    AuthHousekeeping,
    AccessTokens.Default,
    Sessions.Default,
    SessionsRepo.Default,
    AuditLog.Default,
    AuditLogRepo.Default
  ])
)

/** What routes added beside the auth API on its port add to its OpenAPI document. */
export type DocumentRoutes = (spec: Record<string, any>) => Record<string, any>

const page = (operationId: string, summary: string, content: Record<string, unknown>) => ({
  get: {
    tags: ["Pages"],
    operationId,
    summary,
    parameters: [],
    security: [],
    responses: { 200: { description: summary, content } }
  }
})

/** The document's own two routes, which the auth product serves beside its API (at the root and under /auth/v1). */
const documentDocsPages: DocumentRoutes = (spec) => ({
  ...spec,
  tags: [...(spec["tags"] ?? []), { name: "Pages", description: "What the server serves beside the APIs: this document, its page, and the pages the configuration turns on" }],
  paths: {
    ...spec["paths"],
    "/openapi.json": page("pages.openapi", "This document", { "application/json": { schema: { type: "object" } } }),
    "/docs": page("pages.docs", "This document, browsable", { "text/html": { schema: { type: "string" } } })
  }
})

/**
 * The served API as /openapi.json and /docs describe it: the contract, plus whatever other products on the port
 * document. Both pages read it from the same service, so they describe the same document.
 */
const documentedApi = (others: DocumentRoutes) =>
  Layer.effect(
    HttpApi.Api,
    Effect.map(HttpApi.Api, ({ api, context }) => {
      const transform: DocumentRoutes = (spec) => documentRouteOverlaps(others(documentDocsPages(documentAuthApi(api)(spec))))
      return { api: api.annotate(OpenApi.Transform, transform), context }
    })
  )

/**
 * The Swagger page at /docs, made on its first request: @effect/platform's Swagger UI is megabytes of bundled
 * source, and the page embeds it with the OpenAPI document, which every process would hold from start-up for a page
 * few servers are ever asked for. The page is HttpApiSwagger's own, served from a router of its own.
 */
const swaggerModule = lazyModule("the Swagger page", () => import("@effect/platform/HttpApiSwagger"))

const LazySwaggerLive = (path: `/${string}`) =>
  HttpApiBuilder.Router.use((router) =>
    Effect.gen(function*() {
      const { api } = yield* HttpApi.Api
      const scope = yield* Effect.scope
      const page = yield* Effect.cached(
        swaggerModule.pipe(
          Effect.flatMap((swagger) => HttpLayerRouter.toHttpEffect(swagger.layerHttpLayerRouter({ api, path }))),
          Effect.provideService(Scope.Scope, scope)
        )
      )
      yield* router.get(path, Effect.scoped(Effect.flatten(page)).pipe(Effect.orDie))
    })
  )

/**
 * What authErrorMiddleware needs for a 405: the routes' methods at a path, read from the router when first asked,
 * after every route is on it (/docs and /openapi.json are added after the middleware).
 */
const routeMethodsOfAuthApi = Effect.flatMap(HttpApiBuilder.Router, (router) =>
  Effect.cached(Effect.map(router.router, (routes) => routeMethods(routesOf(routes)))))

/** The auth product on the shared port. */
export class AuthHttp extends Context.Tag("auth/AuthHttp")<AuthHttp, HttpProduct>() {}

/**
 * The auth API (at `/` and at `/auth/v1/`, where supabase-js calls it), its OpenAPI document and docs page, behind
 * GoTrue's error boundary. It owns every path another product does not, so unknown paths get GoTrue's 404.
 */
export const AuthHttpLive = (options: { readonly documentOthers?: DocumentRoutes } = {}) =>
  Layer.effect(
    AuthHttp,
    Effect.map(Effect.all([HttpApiBuilder.httpApp, getUserHotRoute, refreshHotRoute]), ([app, getUser, refresh]): HttpProduct => ({
      owns: () => true,
      hot: (request) => getUser(request) ?? refresh(request),
      app: authPrefix((request) =>
        Effect.map(RequestId, (requestId) => authErrorResponse(request, requestId, AuthError.of(404, "not_found", "Not found")))
      )(app) as HttpProduct["app"],
      refuse: (request, requestId, status, code, message) => authErrorResponse(request, requestId, new AuthError({ status, code, message }))
    }))
  ).pipe(
    Layer.provide(
      Layer.merge(LazySwaggerLive("/docs"), HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })).pipe(
        Layer.provide(documentedApi(options.documentOthers ?? ((spec) => spec)))
      )
    ),
    Layer.provide(HttpApiBuilder.middleware(routeMethodsOfAuthApi.pipe(Effect.map(authErrorMiddleware)))),
    Layer.provide(AuthApiLive),
    // The same services the API's layers get (a layer is built once per build): the hot routes use them.
    Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer, SessionsRepo.Default, Sessions.Default, AccessTokens.Default])
  )
