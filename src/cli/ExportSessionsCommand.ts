import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { refreshTokenKey } from "../auth/sessions/RefreshTokenCodec.js"
import { exportSessions } from "../auth/sessions/SessionExport.js"
import { GoTrueAdoptionRepo } from "../auth/users/GoTrueAdoptionRepo.js"
import type { AppConfig } from "../config/AppConfig.js"
import { LoggingLive } from "../platform/Logging.js"
import { databaseFor } from "./StartupWork.js"

/**
 * `export-sessions`: the switch back to Supabase Auth (GoTrue) keeps every live session signed in. Needs the server's
 * settings (the JWT secret derives the sessions' keys). Returns the exit code.
 */
export const exportSessionsCommand = (config: AppConfig): Effect.Effect<0 | 1> =>
  Effect.gen(function*() {
    // Keys are only worth writing where GoTrue can take over: a database it made (and, so, without a table prefix).
    if ((yield* GoTrueAdoptionRepo.migrationRecord(config.db.namespace)) === undefined) {
      yield* Console.error(
        "export-sessions: GoTrue never ran on this database (no auth.schema_migrations), so there is nothing to switch " +
          "back to; no key was written"
      )
      return 1 as const
    }
    const started = yield* Clock.currentTimeMillis
    const counts = yield* exportSessions(refreshTokenKey(Redacted.value(config.jwt.secret)), config.db.namespace, new Date(started))
    const seconds = ((yield* Clock.currentTimeMillis) - started) / 1000
    yield* Console.log(
      `export-sessions: ${counts.exported} live session(s) can now be refreshed by GoTrue (key and counter written); ` +
        `${counts.gotrueTokens} hold GoTrue's own tokens already; ${counts.firstForm} hold a token of Gatehouse's first ` +
        `form, which GoTrue cannot read (those users sign in again once); ${seconds.toFixed(1)} s`
    )
    return 0 as const
  }).pipe(
    Effect.provide(databaseFor(config, { wait: "2 minutes", holder: "command" })),
    Effect.catchAll((error) => Effect.as(Console.error(`export-sessions failed: ${error.message}`), 1 as const)),
    Effect.provide(LoggingLive(config.log))
  )
