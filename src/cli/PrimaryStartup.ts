import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { LoadedConfig } from "../config/loadConfig.js"
import { LoggingLive } from "../platform/Logging.js"
import { PrimaryStartLive } from "./StartupWork.js"
import { modeNotes, startupFailure } from "./StartupLog.js"

/*
 * A cluster's once-only start-up work, run by a short-lived process the primary starts (ServePrimary.ts) and waits
 * for: the database driver, the migrations and the IAM service it needs stay in that process and go with it, so the
 * primary, which supervises the workers for as long as the server runs, never holds them.
 */

/**
 * What a cluster primary said and did before its workers, in the same order: the warnings, the mode, the
 * migrations and the configured IAM admin. A failure is logged here, once ("start-up failed: …"), and exits 1.
 */
export const primaryStartup = (loaded: LoadedConfig) => {
  const { config } = loaded
  return Effect.forEach(loaded.warnings, (warning) => Effect.logWarning(warning), { discard: true }).pipe(
    Effect.zipRight(modeNotes(config)),
    Effect.zipRight(Effect.scoped(Layer.build(PrimaryStartLive(config)))),
    Effect.asVoid,
    Effect.tapError((error) => Effect.logError(`start-up failed: ${startupFailure(config, error)}`)),
    Effect.provide(LoggingLive(config.log))
  )
}
