import * as PgClient from "@effect/sql-pg/PgClient"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"

export interface NotifyOrPollOptions<E> {
  /** The NOTIFY channel other instances announce a change on. */
  readonly channel: string
  /** How often to run `poll` whether or not notifications arrive. */
  readonly interval: Duration.DurationInput
  /**
   * Whether LISTEN may be used. Not on the embedded PGlite: its socket server is one session, and a LISTEN
   * there stalls every other query.
   */
  readonly listenSupported: boolean
  /** Run every interval; a failure is logged and the next interval tries again. */
  readonly poll: Effect.Effect<void, E>
  /** Run on every notification, with its payload. */
  readonly onNotify: (payload: string) => Effect.Effect<void>
  /** The log lines' texts: a failed poll is a warning, a LISTEN that cannot start is debug. */
  readonly messages: { readonly pollFailed: string; readonly listenFailed: string }
}

/**
 * Keeps a per-process cache in step with Postgres, the source of truth: polls every interval, and also LISTENs
 * on the channel when the client is PgClient and LISTEN is supported, so a change reaches this instance at
 * once and the poll is only the fallback (a dropped connection, a database without notifications). Both
 * fibers live as long as the scope.
 */
export const notifyOrPoll = <E>(options: NotifyOrPollOptions<E>): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    yield* options.poll.pipe(
      Effect.catchAll((error) => Effect.logWarning(options.messages.pollFailed, error)),
      Effect.repeat(Schedule.spaced(options.interval)),
      Effect.forkScoped
    )
    const pg = yield* Effect.serviceOption(PgClient.PgClient)
    if (pg._tag === "Some" && options.listenSupported) {
      yield* pg.value.listen(options.channel).pipe(
        Stream.runForEach(options.onNotify),
        Effect.catchAll((error) => Effect.logDebug(options.messages.listenFailed, error)),
        Effect.forkScoped
      )
    }
  })
