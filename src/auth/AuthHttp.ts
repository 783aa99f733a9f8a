import { HttpApi, HttpApiBuilder, HttpApiSwagger, OpenApi } from "@effect/platform"
import { Context, Effect, Layer } from "effect"
import type { HttpProduct } from "../platform/http/HttpEdge.js"
import { RequestId } from "../platform/http/RequestId.js"
import { documentRouteOverlaps } from "../platform/http/RouteOverlaps.js"
import { routeMethods, routesOf } from "../platform/http/RouteMethods.js"
import { AuthApi } from "./Api.js"
import { AuthError } from "./domain/AuthError.js"
import { documentAuthApi } from "./http/AuthApiDocs.js"
import { authErrorMiddleware, authErrorResponse } from "./http/AuthErrorMiddleware.js"
import { AdminAuthenticatedLive, InviterAuthenticatedLive } from "./http/AdminAuthenticatedLive.js"
import { AuthenticatedLive } from "./http/AuthenticatedLive.js"
import { CaptchaProtectedLive, TokenCaptchaProtectedLive } from "./http/CaptchaProtectedLive.js"
import { AdminUsers } from "./admin/AdminUsers.js"
import { AdminUsersHttpLive } from "./admin/AdminUsersHttp.js"
import { GenerateLink } from "./admin/GenerateLink.js"
import { GenerateLinkHttpLive } from "./admin/GenerateLinkHttp.js"
import { AuditHttpLive } from "./admin/AuditHttp.js"
import { authPrefix } from "./http/AuthPrefix.js"
import { External } from "./external/External.js"
import { ExternalHttpLive } from "./external/ExternalHttp.js"
import { IdentitiesHttpLive } from "./external/IdentitiesHttp.js"
import { OAuthProvidersLive } from "./oauth/OAuthProviders.js"
import { Invite } from "./invite/Invite.js"
import { InviteHttpLive } from "./invite/InviteHttp.js"
import { RateLimits } from "./limits/RateLimits.js"
import { LogoutHttpLive } from "./logout/LogoutHttp.js"
import { Profile } from "./profile/Profile.js"
import { Otp } from "./otp/Otp.js"
import { OtpHttpLive } from "./otp/OtpHttp.js"
import { ProfileHttpLive } from "./profile/ProfileHttp.js"
import { Recover } from "./recover/Recover.js"
import { RecoverHttpLive } from "./recover/RecoverHttp.js"
import { Resend } from "./resend/Resend.js"
import { ResendHttpLive } from "./resend/ResendHttp.js"
import { AccessTokens } from "./sessions/AccessTokens.js"
import { ExpiredFlows } from "./sessions/ExpiredFlows.js"
import { Sessions } from "./sessions/Sessions.js"
import { SessionsRepo } from "./sessions/SessionsRepo.js"
import { AuditLog } from "./users/AuditLog.js"
import { AuditLogRepo } from "./users/AuditLogRepo.js"
import { IdentityLinks } from "./users/IdentityLinks.js"
import { SettingsHttpLive } from "./settings/SettingsHttp.js"
import { SsoHttpLive } from "./sso/SsoHttp.js"
import { Signup } from "./signup/Signup.js"
import { SignupHttpLive } from "./signup/SignupHttp.js"
import { PasswordGrant } from "./token/PasswordGrant.js"
import { IdTokenGrant } from "./token/IdTokenGrant.js"
import { PkceGrant } from "./token/PkceGrant.js"
import { TokenHttpLive } from "./token/TokenHttp.js"
import { Verify } from "./verify/Verify.js"
import { VerifyHttpLive } from "./verify/VerifyHttp.js"

/** The auth API's handlers over its services; the ports, database and config come from the caller. */
const AuthApiLive = HttpApiBuilder.api(AuthApi).pipe(
  Layer.provide([
    SettingsHttpLive,
    SignupHttpLive.pipe(Layer.provide(CaptchaProtectedLive)),
    TokenHttpLive.pipe(Layer.provide(TokenCaptchaProtectedLive)),
    VerifyHttpLive,
    ExternalHttpLive,
    OtpHttpLive.pipe(Layer.provide(CaptchaProtectedLive)),
    SsoHttpLive,
    RecoverHttpLive.pipe(Layer.provide(CaptchaProtectedLive)),
    ResendHttpLive.pipe(Layer.provide(CaptchaProtectedLive)),
    ProfileHttpLive.pipe(Layer.provide(AuthenticatedLive)),
    IdentitiesHttpLive.pipe(Layer.provide(AuthenticatedLive)),
    LogoutHttpLive.pipe(Layer.provide(AuthenticatedLive)),
    AdminUsersHttpLive.pipe(Layer.provide(AdminAuthenticatedLive)),
    GenerateLinkHttpLive.pipe(Layer.provide(AdminAuthenticatedLive)),
    InviteHttpLive.pipe(Layer.provide(InviterAuthenticatedLive)),
    AuditHttpLive.pipe(Layer.provide(AdminAuthenticatedLive))
  ]),
  Layer.provide([
    AdminUsers.Default,
    Signup.Default,
    PasswordGrant.Default,
    PkceGrant.Default,
    IdTokenGrant.Default,
    Verify.Default,
    External.Default.pipe(Layer.provide(OAuthProvidersLive)),
    IdentityLinks.Default,
    Otp.Default,
    Recover.Default,
    Resend.Default,
    GenerateLink.Default,
    Invite.Default,
    RateLimits.Default,
    ExpiredFlows.Default,
    AccessTokens.Default, Profile.Default, Sessions.Default, SessionsRepo.Default, AuditLog.Default, AuditLogRepo.Default])
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
    Effect.map(HttpApiBuilder.httpApp, (app): HttpProduct => ({
      owns: () => true,
      app: authPrefix((request) =>
        Effect.map(RequestId, (requestId) => authErrorResponse(request, requestId, AuthError.of(404, "not_found", "Not found")))
      )(app) as HttpProduct["app"],
      refuse: (request, requestId, status, code, message) => authErrorResponse(request, requestId, new AuthError({ status, code, message }))
    }))
  ).pipe(
    Layer.provide(
      Layer.merge(HttpApiSwagger.layer({ path: "/docs" }), HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })).pipe(
        Layer.provide(documentedApi(options.documentOthers ?? ((spec) => spec)))
      )
    ),
    Layer.provide(HttpApiBuilder.middleware(routeMethodsOfAuthApi.pipe(Effect.map(authErrorMiddleware)))),
    Layer.provide(AuthApiLive),
    Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer])
  )
