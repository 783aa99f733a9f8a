import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Function from "effect/Function"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type { CorsPolicy } from "./Cors.js"
import { type EdgeRefusal, edgeMiddleware, pathOf } from "./EdgeMiddleware.js"
import { RequestId } from "./RequestId.js"
import { observeRequests, type RequestTelemetrySettings } from "./RequestTelemetry.js"

/**
 * One product on the shared port: the paths it owns, its app (its routes, error handling and envelope), and its
 * answer to a refusal at the edge. An app fails with RouteNotFound only for a path it owns but has no route for
 * (a wrong method, an id that is no id); the edge then hands the request to the next product that owns it.
 */
export interface HttpProduct {
  readonly owns: (path: string) => boolean
  readonly app: HttpApp.Default<HttpServerError.RouteNotFound, never>
  readonly refuse: EdgeRefusal
}

export interface EdgeSettings {
  readonly cors: CorsPolicy
  readonly requestIdHeader: Option.Option<string>
  readonly operatorToken: Option.Option<Redacted.Redacted<string>>
  readonly telemetry: RequestTelemetrySettings
}

/**
 * The products in order, the last one taking every path no other owns: the first owner of a request's path
 * answers it, and a RouteNotFound passes it on to the next owner.
 */
const dispatch = (products: ReadonlyArray<HttpProduct>): HttpApp.Default<HttpServerError.RouteNotFound> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const path = pathOf(request)
    const owners = products.filter((product) => product.owns(path))
    // The common case, one owner, adds nothing per request; an error is built only when a request is not found.
    return owners.length === 1 ? owners[0]!.app : owners.reduceRight<HttpApp.Default<HttpServerError.RouteNotFound>>(
      (next, owner) => Effect.catchTag(owner.app, "RouteNotFound", () => next),
      Effect.failSync(() => new HttpServerError.RouteNotFound({ request }))
    )
  })

/**
 * The one HTTP edge both products share: the request's span and metrics (observeRequests), request id, CORS, the
 * body limit and the access log (edgeMiddleware), then each request to the product that owns its path. The last
 * product should own every path, so that every request gets an answer in some product's envelope; a defect no
 * product caught is answered there too (500, logged), not as the platform's empty 500.
 */
export const HttpEdgeLive = <const Products extends ReadonlyArray<Context.Tag<any, HttpProduct>>>(
  settings: EdgeSettings,
  products: Products
): Layer.Layer<never, never, HttpServer.HttpServer | Context.Tag.Identifier<Products[number]>> =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const resolved = yield* Effect.forEach(products, (tag) => tag)
    const ownerOf = (request: HttpServerRequest.HttpServerRequest): HttpProduct =>
      resolved.find((product) => product.owns(pathOf(request))) ?? resolved[resolved.length - 1]!
    const app = observeRequests(settings.telemetry)(edgeMiddleware({
      ...settings,
      reject: (request, requestId, status, code, message) => ownerOf(request).refuse(request, requestId, status, code, message)
    })(Effect.catchAllDefect(dispatch(resolved), (defect) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        yield* Effect.logError("unexpected failure", Cause.die(defect))
        return ownerOf(request).refuse(request, yield* RequestId, 500, "unexpected_failure", "Unexpected failure, please check server logs for more information")
      }))))
    return HttpServer.serve(app as HttpApp.Default<never, never>)
  })).pipe(
    // The platform's own request span records the full URL (GET /verify?token=…), every request header (apikey)
    // and response header (a sign-in redirect's Location carries the tokens): observeRequests makes the span.
    (served) => HttpMiddleware.withTracerDisabledWhen(served, Function.constTrue)
  )
