import * as HttpServer from "@effect/platform/HttpServer"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { LoadedConfig } from "../config/loadConfig.js"
import { IamGrpcAddress } from "../iam/grpc/IamGrpcAddress.js"
import { LoggingLive } from "../platform/Logging.js"
import { reportReady, reportStartupFailure } from "../platform/process/Workers.js"
import { releaseYoungGeneration } from "../platform/process/YoungGeneration.js"
import { banner } from "./Banner.js"
import { ServerLive } from "./ServerLive.js"
import { modeNotes, startupFailure, stopped } from "./StartupLog.js"

/*
 * The ways to serve with the whole server: one process (serve), and with AUTH_WORKERS > 1 a cluster's workers
 * (serveWorker); the cluster's primary is ServePrimary.ts, which loads none of this. Each runs until a signal
 * interrupts it.
 */

/** Once serving, until interrupted: the young generation, held while the modules loaded, may grow again (YoungGeneration.ts). */
const serveRequests: Effect.Effect<never> = Effect.zipRight(Effect.sync(releaseYoungGeneration), Effect.never)

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
    Effect.zipRight(Effect.scoped(Layer.build(App).pipe(Effect.flatMap(serving), Effect.zipRight(serveRequests))).pipe(
      Effect.onInterrupt(() => stopped)
    )),
    Effect.tapError((error) => Effect.logError(`start-up failed: ${startupFailure(config, error)}`)),
    Effect.provide(LoggingLive(config.log))
  )
}

/**
 * In a cluster worker: the server without the once-only work, its log lines marked with the worker id. It tells
 * the primary when it serves, or why it could not start (the primary logs that once for all workers).
 */
export const serveWorker = (loaded: LoadedConfig, id: number) => {
  const { config } = loaded
  return Effect.scoped(Layer.build(ServerLive(config, "worker")).pipe(Effect.zipRight(reportReady), Effect.zipRight(serveRequests))).pipe(
    Effect.onInterrupt(() => stopped),
    Effect.tapError((error) => reportStartupFailure(startupFailure(config, error))),
    Effect.annotateLogs("worker", id),
    Effect.provide(LoggingLive(config.log))
  )
}
