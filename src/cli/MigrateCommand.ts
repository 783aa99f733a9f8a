import * as Effect from "effect/Effect"
import type { DatabaseSettings } from "../config/PlatformConfig.js"
import { LoggingLive } from "../platform/Logging.js"
import { databaseFor, migrations } from "./StartupWork.js"

/** `migrate`: the pending migrations and nothing else, so it needs only the database settings. */
export const migrateCommand = (config: DatabaseSettings) =>
  migrations(config).pipe(
    Effect.provide(databaseFor(config, { wait: "2 minutes", holder: "command" })),
    Effect.tapError((error) => Effect.logError(error.message)),
    Effect.provide(LoggingLive(config.log))
  )
