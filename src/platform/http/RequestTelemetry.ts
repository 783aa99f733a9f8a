import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"
import { pathOf } from "./EdgeMiddleware.js"
import { routeParams, routeTemplate } from "./RouteTemplate.js"

export interface RequestTelemetrySettings {
  readonly tracing: boolean
  readonly metrics: boolean
}

const requests = Metric.counter("http.server.requests", { description: "HTTP requests answered, by route, method and status", incremental: true })
const duration = Metric.histogram(
  "http.server.request.duration_seconds",
  MetricBoundaries.fromIterable([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]),
  "Time to answer HTTP requests in seconds, by route, method and status"
)

/**
 * Stands in for the server span when only metrics are on: the router names the matched route on the current
 * span (`http.route`), and this keeps that one attribute without tracing anything.
 */
class RouteRecorder implements Tracer.Span {
  readonly _tag = "Span"
  readonly name = "route"
  readonly spanId = "route"
  readonly traceId = "route"
  readonly parent = Option.none()
  readonly context = Context.empty()
  readonly status: Tracer.SpanStatus = { _tag: "Started", startTime: 0n }
  readonly attributes = new Map<string, unknown>()
  readonly links: ReadonlyArray<Tracer.SpanLink> = []
  readonly sampled = false
  readonly kind = "server"
  end(): void {}
  attribute(key: string, value: unknown): void {
    if (key === "http.route") this.attributes.set(key, value)
  }
  event(): void {}
  addLinks(): void {}
}

/**
 * One server span per request and the request metrics. The platform's own request span is off (HttpEdge.ts):
 * it records the full URL (GET /verify?token=…), every request header (apikey) and response header (the
 * Location of a sign-in redirect carries the tokens). This span records the method, the parametrised route and
 * its parameters, and the status, nothing a client sent as a secret. It is named `METHOD /route` once the
 * route is known, and joins the caller's trace when the request has a `traceparent` (or B3) header.
 */
export const observeRequests = (settings: RequestTelemetrySettings) =>
<E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> => {
  if (!settings.tracing && !settings.metrics) return app
  return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const method = request.method
    const observed = (span: Tracer.Span) =>
      Effect.flatMap(Clock.currentTimeNanos, (started) =>
        Effect.withParentSpan(app, span).pipe(
          Effect.onExit((exit) => {
            const pattern = span.attributes.get("http.route")
            const route = typeof pattern === "string" ? routeTemplate(pattern) : undefined
            const status = Exit.isSuccess(exit) ? exit.value.status : 500
            if (settings.tracing) {
              span.attribute("http.method", method)
              span.attribute("http.request.method", method)
              span.attribute("http.response.status_code", status)
              if (route !== undefined && typeof pattern === "string") {
                span.attribute("http.route", route)
                for (const [key, value] of Object.entries(routeParams(pattern, pathOf(request)))) {
                  span.attribute(`http.route.params.${key}`, value)
                }
                nameSpan(span, `${method} ${route}`)
              }
            }
            if (!settings.metrics) return Effect.void
            return Effect.flatMap(Clock.currentTimeNanos, (finished) => {
              const tagged = <M extends Metric.Metric<any, any, any>>(metric: M): M =>
                Metric.taggedWithLabels(metric, [
                  MetricLabel.make("http.route", route ?? "unmatched"),
                  MetricLabel.make("http.request.method", method),
                  MetricLabel.make("http.response.status_code", String(status))
                ]) as M
              return Effect.zipRight(
                Metric.increment(tagged(requests)),
                Metric.update(tagged(duration), Number(finished - started) / 1e9)
              )
            })
          })
        ))
    return settings.tracing
      ? Effect.useSpan(
        method,
        { kind: "server", parent: Option.getOrUndefined(HttpTraceContext.fromHeaders(request.headers)), captureStackTrace: false },
        observed
      )
      : observed(new RouteRecorder())
  })
}

/**
 * Renames the OpenTelemetry span under an Effect span: an Effect span's name is fixed when it starts, and the
 * route is known only after routing.
 */
const nameSpan = (span: Tracer.Span, name: string): void => {
  const otel = (span as { readonly span?: { readonly updateName?: (name: string) => unknown } }).span
  otel?.updateName?.(name)
}
