import type { SpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { PlatformConfig } from "../config/PlatformConfig.js"
import { lazyModule } from "./LazyModule.js"

const loadSdk = lazyModule("the OpenTelemetry SDK", () => import("./TelemetrySdk.js"))

/** Which process this is: alone, a cluster worker (serves requests), or the cluster's primary (serves none). */
export type ProcessRole = "single" | "worker" | "primary"

export class TelemetryStartError extends Data.TaggedError("TelemetryStartError")<{ readonly message: string }> {}

/**
 * Tracing and metrics as configured. With TRACING_ENABLED off the tracer is disabled: each service method's span
 * (Traced.ts) is skipped altogether and each SQL statement's is a no-op, where they would be exported nowhere. With both
 * off, the OpenTelemetry SDK is not even loaded (TelemetrySdk.ts): its exporters and Prometheus would cost every
 * process tens of megabytes for nothing.
 */
export const TelemetryLive = (
  config: PlatformConfig,
  options: { readonly role: ProcessRole; readonly spanProcessor?: SpanProcessor } = { role: "single" }
): Layer.Layer<never, TelemetryStartError> => {
  const { metricsEnabled, metricsExporter, tracingEnabled } = config.observability
  // The primary handles no request: it traces nothing, and of the metrics it only serves the workers' scrape.
  const tracing = tracingEnabled && options.role !== "primary"
  const metrics = metricsEnabled && (options.role !== "primary" || metricsExporter === "prometheus")
  if (!tracing && !metrics) return Layer.setTracerEnabled(false)
  return Layer.unwrapEffect(
    loadSdk.pipe(
      Effect.mapError(({ message }) => new TelemetryStartError({ message })),
      Effect.map(({ TelemetrySdkLive }) => TelemetrySdkLive(config, options, { tracing, metrics }))
    )
  )
}
