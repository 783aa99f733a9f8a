import type { IncomingHttpHeaders, Server } from "node:http"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Function from "effect/Function"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { type CorsPolicy, decideCors } from "./Cors.js"
import { type EdgeRefusal, edgeMiddleware, pathOf, withAccessLog } from "./EdgeMiddleware.js"
import { type HotOutcome, type HotRoute, installHotLane, isHotAnswer } from "./HotLane.js"
import { RequestId, requestIdFrom } from "./RequestId.js"
import { RequestPeer } from "./RequestPeer.js"
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
  /** The product's routes on the hot lane (HotLane.ts), when it has any: each answers only what its app would. */
  readonly hot?: HotRoute
}

export interface EdgeSettings {
  readonly cors: CorsPolicy
  readonly requestIdHeader: Option.Option<string>
  readonly operatorToken: Option.Option<Redacted.Redacted<string>>
  readonly telemetry: RequestTelemetrySettings
  /**
   * The Node server the app is served on, for the hot lane. Without it, or with tracing, metrics or the operator's
   * signature on (which the lane does not do), every request takes the app.
   */
  readonly node?: Server | undefined
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
 * The products' hot routes behind what the edge does to every request they take: the owner as dispatch finds it,
 * CORS, the request id and the access log. A route that reads a body keeps under the edge's body limit itself.
 */
const hotRouteOf = (settings: EdgeSettings, products: ReadonlyArray<HttpProduct>): HotRoute | undefined => {
  if (!products.some((product) => product.hot !== undefined)) return undefined
  if (settings.telemetry.tracing || settings.telemetry.metrics || Option.isSome(settings.operatorToken)) return undefined
  const requestIdHeader = Option.getOrUndefined(settings.requestIdHeader)
  return (request) => {
    const headers = request.headers as Readonly<IncomingHttpHeaders & Record<string, string | undefined>>
    const path = (request.url ?? "/").split("?", 1)[0]!
    const owner = products.find((product) => product.owns(path)) ?? products[products.length - 1]!
    const program = owner.hot?.(request)
    if (program === undefined) return undefined
    const method = request.method ?? "GET"
    const cors = decideCors(settings.cors, { method, headers })
    // After the answer's own headers, as the edge's pre-response hook sets them on the app's response.
    const answered = Effect.map(program, (outcome): HotOutcome =>
      isHotAnswer(outcome) ? { ...outcome, headers: { ...outcome.headers, ...cors.headers } } : outcome).pipe(
        Effect.provideService(RequestPeer, { headers, remoteAddress: request.socket.remoteAddress })
      )
    return withAccessLog(method, path, requestIdFrom(headers, requestIdHeader), answered, (outcome) => isHotAnswer(outcome) ? outcome.status : undefined)
  }
}

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
  Layer.unwrapScoped(Effect.gen(function*() {
    const resolved = yield* Effect.forEach(products, (tag) => tag)
    const hot = hotRouteOf(settings, resolved)
    if (hot !== undefined && settings.node !== undefined) {
      yield* installHotLane(settings.node, hot, yield* FiberSet.makeRuntime<never, HotOutcome, never>())
    }
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
