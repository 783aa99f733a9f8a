import { Metrics, NodeSdk, Resource, Tracer as OtelTracer } from "@effect/opentelemetry"
import { Metadata } from "@grpc/grpc-js"
import { type DiagLogger, diag, DiagLogLevel } from "@opentelemetry/api"
import { OTLPMetricExporter as GrpcMetricExporter } from "@opentelemetry/exporter-metrics-otlp-grpc"
import { OTLPMetricExporter as JsonMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http"
import { OTLPMetricExporter as ProtobufMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto"
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus"
import { OTLPTraceExporter as GrpcTraceExporter } from "@opentelemetry/exporter-trace-otlp-grpc"
import { OTLPTraceExporter as JsonTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { OTLPTraceExporter as ProtobufTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto"
import { RuntimeNodeInstrumentation } from "@opentelemetry/instrumentation-runtime-node"
import { MeterProvider, type MetricProducer, type MetricReader, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor, type SpanExporter, type SpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import type { PlatformConfig } from "../config/PlatformConfig.js"
import { VERSION } from "../Package.js"
import { drawUuid } from "./SecureRandom.js"
import { answerMetricsRequests, CollectingReader, workersMetricProducer } from "./process/ClusterMetrics.js"
import { type ProcessRole, TelemetryStartError } from "./Telemetry.js"

/*
 * The OpenTelemetry SDK, its exporters and Prometheus: imported by Telemetry.ts only when tracing or metrics are on,
 * since loading them costs every process tens of megabytes it would otherwise never use.
 */

type Otlp = PlatformConfig["observability"]["otlp"]

const plainHeaders = (otlp: Otlp): Record<string, string> =>
  Object.fromEntries(Object.entries(otlp.headers).map(([name, value]) => [name, Redacted.value(value)]))

const grpcMetadata = (otlp: Otlp): Metadata => {
  const metadata = new Metadata()
  for (const [name, value] of Object.entries(otlp.headers)) metadata.set(name, Redacted.value(value))
  return metadata
}

// Each exporter also reads the standard variables from the process environment itself; what Gatehouse read
// (which includes .env) is passed explicitly and wins.
const traceExporter = (otlp: Otlp): SpanExporter => {
  const url = Option.match(otlp.tracesEndpoint, { onNone: () => ({}), onSome: (url) => ({ url }) })
  switch (otlp.protocol) {
    case "grpc":
      return new GrpcTraceExporter({ ...url, metadata: grpcMetadata(otlp) })
    case "http/json":
      return new JsonTraceExporter({ ...url, headers: plainHeaders(otlp) })
    case "http/protobuf":
      return new ProtobufTraceExporter({ ...url, headers: plainHeaders(otlp) })
  }
}

const metricExporter = (otlp: Otlp) => {
  const url = Option.match(otlp.metricsEndpoint, { onNone: () => ({}), onSome: (url) => ({ url }) })
  switch (otlp.protocol) {
    case "grpc":
      return new GrpcMetricExporter({ ...url, metadata: grpcMetadata(otlp) })
    case "http/json":
      return new JsonMetricExporter({ ...url, headers: plainHeaders(otlp) })
    case "http/protobuf":
      return new ProtobufMetricExporter({ ...url, headers: plainHeaders(otlp) })
  }
}

const ResourceLive = (config: PlatformConfig) =>
  Resource.layer({
    serviceName: config.observability.serviceName,
    serviceVersion: VERSION,
    attributes: {
      ...config.observability.resourceAttributes,
      "auth.version": VERSION,
      // Every process exports its own series (a cluster's workers too): the instance id tells them apart.
      "service.instance.id": drawUuid()
    }
  })

/**
 * The SDK's own complaints (an unreachable collector, a refused export) as log lines at warn; with DEBUG, its
 * diagnostics too, at info. Without a logger the SDK says nothing, and a collector that is down goes unnoticed.
 */
const DiagnosticsLive = (debug: boolean) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const log = (level: "info" | "warn" | "error") => (message: string, ...args: Array<unknown>) =>
      Runtime.runFork(runtime)(
        (level === "error" ? Effect.logError : level === "warn" ? Effect.logWarning : Effect.logInfo)(`opentelemetry: ${describe(message)}`).pipe(
          Effect.annotateLogs(args.length > 0 ? { details: args.map(describe).join(" ") } : {})
        )
      )
    // DEBUG alone shows the diagnostics, whatever LOG_LEVEL says (down to info).
    const logger: DiagLogger = { error: log("error"), warn: log("warn"), info: log("info"), debug: log("info"), verbose: log("info") }
    yield* Effect.acquireRelease(
      Effect.sync(() => diag.setLogger(logger, { logLevel: debug ? DiagLogLevel.DEBUG : DiagLogLevel.WARN, suppressOverrideMessage: true })),
      () => Effect.sync(() => diag.disable())
    )
  }))

// A failed export reaches the logger as the error serialised to JSON, stack and all: the message is what says
// what went wrong (connect ECONNREFUSED 127.0.0.1:4318).
const describe = (value: unknown): string => {
  if (value instanceof Error) return value.message
  if (typeof value !== "string") return String(value)
  if (!value.startsWith("{")) return value
  try {
    const parsed: unknown = JSON.parse(value)
    const message = typeof parsed === "object" && parsed !== null ? (parsed as { message?: unknown }).message : undefined
    return typeof message === "string" ? message : value
  } catch {
    return value
  }
}

/** Traces: the OpenTelemetry tracer for every Effect span, exported in batches (or to `spanProcessor`, in tests). */
const TracingLive = (config: PlatformConfig, spanProcessor: SpanProcessor | undefined) =>
  OtelTracer.layer.pipe(
    Layer.provide(NodeSdk.layerTracerProvider(spanProcessor ?? new BatchSpanProcessor(traceExporter(config.observability.otlp))))
  )

/**
 * Metrics: Effect's registry (the request metrics, AuthMetrics) and Node's runtime metrics, through one reader.
 * A cluster worker's reader only collects when the primary asks (the primary serves the scrape for all of
 * them); pushed metrics go from each process on its own.
 */
const MetricsLive = (config: PlatformConfig, role: ProcessRole) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const { metricsExporter, prometheusHost, prometheusPort } = config.observability
    const resource = yield* Resource.Resource
    const own: ReadonlyArray<MetricProducer> = role === "primary" ? [workersMetricProducer(resource)] : [yield* Metrics.makeProducer]
    const reader: MetricReader = metricsExporter === "opentelemetry"
      ? new PeriodicExportingMetricReader({ exporter: metricExporter(config.observability.otlp), metricProducers: [...own] })
      : role === "worker"
      ? new CollectingReader({ metricProducers: [...own] })
      : new PrometheusExporter({ host: prometheusHost, port: prometheusPort, endpoint: "/", preventServerStart: true, metricProducers: [...own] })
    // The primary serves no requests: its own runtime would only add a third process's series to every scrape.
    const provider = yield* Effect.acquireRelease(
      Effect.sync(() => new MeterProvider({ resource, readers: [reader] })),
      (provider) => Effect.promise(() => provider.shutdown().catch(() => undefined)).pipe(Effect.timeoutOption("3 seconds"))
    )
    if (role !== "primary") {
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          const runtime = new RuntimeNodeInstrumentation()
          runtime.setMeterProvider(provider)
          runtime.enable()
          return runtime
        }),
        (runtime) => Effect.sync(() => runtime.disable())
      )
    }
    if (reader instanceof PrometheusExporter) {
      yield* Effect.tryPromise({
        try: () => reader.startServer(),
        catch: (error) =>
          new TelemetryStartError({
            message: `metrics: could not listen on ${prometheusHost}:${prometheusPort}: ${error instanceof Error ? error.message : String(error)}`
          })
      })
      yield* Effect.logInfo(`metrics: Prometheus text on http://${prometheusHost}:${prometheusPort}/`)
    }
    if (reader instanceof CollectingReader) yield* answerMetricsRequests(reader)
  }))

/** Tracing, metrics or both, as Telemetry.ts decided: this module is loaded only when one of them is on. */
export const TelemetrySdkLive = (
  config: PlatformConfig,
  options: { readonly role: ProcessRole; readonly spanProcessor?: SpanProcessor | undefined },
  on: { readonly tracing: boolean; readonly metrics: boolean }
): Layer.Layer<never, TelemetryStartError> =>
  Layer.mergeAll(
    on.tracing ? TracingLive(config, options.spanProcessor) : Layer.setTracerEnabled(false),
    on.metrics ? MetricsLive(config, options.role) : Layer.empty
  ).pipe(
    Layer.provide(ResourceLive(config)),
    Layer.provide(DiagnosticsLive(config.observability.debug))
  )
