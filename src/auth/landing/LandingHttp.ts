import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { AuthConfig } from "../../config/AuthConfig.js"
import type { PlatformConfig } from "../../config/PlatformConfig.js"
import type { HttpProduct } from "../../platform/http/HttpEdge.js"
import { RequestId } from "../../platform/http/RequestId.js"
import { AuthError } from "../domain/AuthError.js"
import { authErrorResponse } from "../http/AuthErrorMiddleware.js"
import { LANDING_HEADERS, landingPage, type LandingPageOptions, siteIsThisServer } from "./LandingPage.js"

const PATH = "/"

/** Whether this configuration serves the landing page: when its site URL is this server (siteIsThisServer). */
export const landingPageServed = (config: Pick<AuthConfig, "siteUrl"> & Pick<PlatformConfig, "api">): boolean =>
  siteIsThisServer(config.siteUrl, config.api.externalUrl, config.api.port)

/** Adds the landing page to an OpenAPI document, where the server serves it (at the root only). */
export const documentLandingPage = (spec: Record<string, any>): Record<string, any> => ({
  ...spec,
  paths: {
    ...spec["paths"],
    [PATH]: {
      servers: [{ url: "/" }],
      get: {
        tags: ["Pages"],
        operationId: "pages.landing",
        summary: "Landing page",
        description: "Where links land when SITE_URL is this server: says who signed in, or what went wrong, from the " +
          "address's fragment (read in the page; nothing is sent anywhere).",
        parameters: [],
        security: [],
        responses: { 200: { description: "The page", content: { "text/html": { schema: { type: "string" } } } } }
      }
    }
  }
})

/** The landing page on the shared port, ahead of the auth API, which has no route at `/`. */
export class LandingHttp extends Context.Tag("auth/LandingHttp")<LandingHttp, HttpProduct>() {}

/**
 * GET (and HEAD) `/` answer the page, built once; any other method there is the auth API's 405. It owns `/` alone:
 * `/auth/v1/` and every other path stay the auth API's and IAM's.
 */
export const LandingHttpLive = (options: LandingPageOptions): Layer.Layer<LandingHttp> => {
  const page = HttpServerResponse.text(landingPage(options), { contentType: "text/html; charset=utf-8", headers: LANDING_HEADERS })
  return Layer.succeed(LandingHttp, {
    owns: (path) => path === PATH,
    app: Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      request.method === "GET" || request.method === "HEAD"
        ? Effect.succeed(page)
        : Effect.map(RequestId, (requestId) =>
          HttpServerResponse.setHeader(
            authErrorResponse(request, requestId, AuthError.of(405, "method_not_allowed", "Method not allowed")),
            "allow",
            "GET, HEAD"
          ))),
    refuse: (request, requestId, status, code, message) => authErrorResponse(request, requestId, new AuthError({ status, code, message }))
  })
}
