import { defaultTeardown, type Teardown } from "@effect/platform/Runtime"
import * as Effect from "effect/Effect"
import type { LoadedConfig } from "../config/loadConfig.js"
import { LoggingLive } from "../platform/Logging.js"
import { runStartupChild } from "../platform/process/StartupChild.js"
import { freePorts, runWorkers } from "../platform/process/Workers.js"
import { TelemetryLive } from "../platform/Telemetry.js"
import { startupFailure, stopped } from "./StartupLog.js"

/*
 * A cluster's primary (AUTH_WORKERS > 1). It serves no request, so it loads none of the routes, and it leaves the
 * start-up work to a process of its own (PrimaryStartup.ts): it loads only the configuration and the supervisor,
 * which keeps it a small process beside the workers for as long as the server runs.
 */

/**
 * Production with AUTH_WORKERS > 1, in the primary: the once-only start-up work (in a short-lived process, which logs
 * what it does and why it failed), then the workers, supervised. The primary keeps no database connection and
 * listens on nothing itself (node:cluster binds the workers' ports in it).
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
  return runStartupChild.pipe(
    Effect.zipRight(ports),
    // The start-up process has logged its own failure.
    Effect.tapError((error) =>
      error._tag === "StartupChildFailed" && error.logged ? Effect.void : Effect.logError(`start-up failed: ${startupFailure(config, error)}`)
    ),
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
