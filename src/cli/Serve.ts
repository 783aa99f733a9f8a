import { defaultTeardown, type Teardown } from "@effect/platform/Runtime"
import { HttpServer } from "@effect/platform"
import { Context, Effect, Layer, Option } from "effect"
import type { AppConfig } from "../config/AppConfig.js"
import type { LoadedConfig } from "../config/loadConfig.js"
import { IamGrpcAddress } from "../iam/grpc/GrpcServer.js"
import { LoggingLive } from "../platform/Logging.js"
import { listenFailure } from "../platform/process/ListenFailure.js"
import { freePorts, reportReady, reportStartupFailure, runWorkers } from "../platform/process/Workers.js"
import { TelemetryLive } from "../platform/Telemetry.js"
import { banner } from "./Banner.js"
import { PrimaryStartLive, ServerLive } from "./ServerLive.js"

/*
 * The three ways to serve: one process (serve), and with AUTH_WORKERS > 1 a cluster's primary (servePrimary) and its
 * workers (serveWorker). Each runs until a signal interrupts it.
 */

/** What start-up says about the mode besides the warnings: multi-instance mode and where the operator calls. */
const modeNotes = (config: AppConfig): Effect.Effect<void> =>
  config.multiInstance
    ? Effect.logInfo("multi-instance mode: every request but /health must be signed by the operator (x-nf-sign)").pipe(
      Effect.annotateLogs(Option.match(config.api.endpoint, { onNone: () => ({}), onSome: (endpoint) => ({ operator_endpoint: endpoint }) }))
    )
    : Effect.void

// Said once the ports are closed and the requests in flight have been answered (a signal interrupts the server).
const stopped = Effect.logInfo("stopped: requests in flight answered, connections closed")

// Start-up failures are operator errors (port taken, database down): one line, no stack trace.
const startupFailure = (
  config: AppConfig,
  error: { readonly _tag: string; readonly message: string; readonly cause?: unknown }
): string =>
  error._tag === "ServeError" && error.cause instanceof Error
    ? listenFailure(config.api, "PORT (or AUTH_API_PORT)", error.cause)
    : error.message

/** One process, the default (and the only way the embedded database serves): start-up work, then the server. */
export const serve = (loaded: LoadedConfig) => {
  const { config } = loaded
  const App = ServerLive(config, "single")
  // The banner says "listening on": only once that is true, so a server refused its data directory or its port
  // prints the reason alone.
  const serving = (built: Context.Context<HttpServer.HttpServer>): Effect.Effect<void> =>
    config.mode !== "embedded" ? Effect.void : Effect.sync(() => {
      const { address } = Context.get(built, HttpServer.HttpServer)
      const http = address._tag === "TcpAddress" ? address.port : config.api.port
      const grpc = Option.map(Context.getOption(built, IamGrpcAddress), ({ port }) => port)
      process.stderr.write(banner(loaded, { http, grpc }) + "\n")
    })
  // Settings that start but will fail later (GoTrue starts with them too): said once, before serving.
  return Effect.forEach(loaded.warnings, (warning) => Effect.logWarning(warning), { discard: true }).pipe(
    Effect.zipRight(modeNotes(config)),
    Effect.zipRight(Effect.scoped(Layer.build(App).pipe(Effect.flatMap(serving), Effect.zipRight(Effect.never))).pipe(
      Effect.onInterrupt(() => stopped)
    )),
    Effect.tapError((error) => Effect.logError(`start-up failed: ${startupFailure(config, error)}`)),
    Effect.provide(LoggingLive(config.log))
  )
}

/**
 * Production with AUTH_WORKERS > 1, in the primary: the once-only start-up work, then the workers, supervised. The
 * primary keeps no database connection and listens on nothing itself (node:cluster binds the workers' ports in it).
 */
export const servePrimary = (loaded: LoadedConfig) => {
  const { config } = loaded
  const iamPort = config.iam.enabled && config.iam.grpcPort === 0
  const ports = Effect.map(
    freePorts([...(config.api.port === 0 ? [config.api.host] : []), ...(iamPort ? [config.iam.grpcHost] : [])]),
    (free) => ({
      http: config.api.port === 0 ? free[0]! : config.api.port,
      grpc: iamPort ? free[free.length - 1]! : config.iam.grpcPort
    })
  )
  return Effect.forEach(loaded.warnings, (warning) => Effect.logWarning(warning), { discard: true }).pipe(
    Effect.zipRight(modeNotes(config)),
    Effect.zipRight(Effect.scoped(Layer.build(PrimaryStartLive(config)))),
    Effect.zipRight(ports),
    Effect.tapError((error) => Effect.logError(`start-up failed: ${startupFailure(config, error)}`)),
    Effect.flatMap(({ grpc, http }) =>
      Effect.logInfo(`starting ${config.workers} workers`).pipe(
        Effect.zipRight(runWorkers({
          count: config.workers,
          // The worker's environment wins over .env, and AUTH_ over every other spelling.
          env: { AUTH_API_PORT: String(http), AUTH_IAM_GRPC_PORT: String(grpc) },
          // As a single process says it, once every worker serves.
          serving: Effect.logInfo(`Listening on http://${config.api.host}:${http}`).pipe(
            Effect.annotateLogs({ workers: config.workers, ...(config.iam.enabled ? { grpc: `${config.iam.grpcHost}:${grpc}` } : {}) })
          )
        })),
        // The primary serves the Prometheus scrape for all workers (ClusterMetrics).
        Effect.provide(TelemetryLive(config, { role: "primary" })),
        Effect.tapError((error) => Effect.logError(error.message)),
        Effect.onInterrupt(() => stopped)
      )),
    Effect.provide(LoggingLive(config.log))
  )
}

// Stopped by a signal, the primary exits 0 unless a worker did not stop cleanly (runWorkers sets process.exitCode).
export const primaryTeardown: Teardown = (exit, onExit) =>
  defaultTeardown(exit, (code) => onExit(code !== 0 ? code : Number(process.exitCode ?? 0)))

/**
 * In a cluster worker: the server without the once-only work, its log lines marked with the worker id. It tells
 * the primary when it serves, or why it could not start (the primary logs that once for all workers).
 */
export const serveWorker = (loaded: LoadedConfig, id: number) => {
  const { config } = loaded
  return Effect.scoped(Layer.build(ServerLive(config, "worker")).pipe(Effect.zipRight(reportReady), Effect.zipRight(Effect.never))).pipe(
    Effect.onInterrupt(() => stopped),
    Effect.tapError((error) => reportStartupFailure(startupFailure(config, error))),
    Effect.annotateLogs("worker", id),
    Effect.provide(LoggingLive(config.log))
  )
}
