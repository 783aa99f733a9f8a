import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { AppConfig } from "../config/AppConfig.js"
import { listenFailure } from "../platform/process/ListenFailure.js"

/* What every way to serve says at start-up and at the stop, shared by Serve.ts and ServePrimary.ts. */

/** What start-up says about the mode besides the warnings: multi-instance mode and where the operator calls. */
export const modeNotes = (config: AppConfig): Effect.Effect<void> =>
  config.multiInstance
    ? Effect.logInfo("multi-instance mode: every request but /health must be signed by the operator (x-nf-sign)").pipe(
      Effect.annotateLogs(Option.match(config.api.endpoint, { onNone: () => ({}), onSome: (endpoint) => ({ operator_endpoint: endpoint }) }))
    )
    : Effect.void

// Said once the ports are closed and the requests in flight have been answered (a signal interrupts the server).
export const stopped = Effect.logInfo("stopped: requests in flight answered, connections closed")

// Start-up failures are operator errors (port taken, database down): one line, no stack trace.
export const startupFailure = (
  config: AppConfig,
  error: { readonly _tag: string; readonly message: string; readonly cause?: unknown }
): string =>
  error._tag === "ServeError" && error.cause instanceof Error
    ? listenFailure(config.api, "PORT (or AUTH_API_PORT)", error.cause)
    : error.message
