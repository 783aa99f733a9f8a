import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/**
 * Runs `sweep` every `interval` for as long as the scope lives, on each instance: the clean-ups of tables that would
 * otherwise only grow (expired flows, challenges, refilled rate-limit buckets). A sweep that fails is logged and the
 * next one comes at the next interval: no sweep decides an answer, so a missed one costs only space.
 */
export const sweepEvery = <A, E, R>(
  interval: Duration.DurationInput,
  what: string,
  sweep: Effect.Effect<A, E, R>
): Effect.Effect<void, never, R | Scope.Scope> =>
  Effect.sleep(interval).pipe(
    Effect.zipRight(sweep),
    Effect.catchAllCause((cause) => Effect.logWarning(`could not sweep ${what}`, cause)),
    Effect.forever,
    Effect.forkScoped,
    Effect.asVoid
  )

/**
 * One sweep worked off in batches: `deleteBatch(limit)` deletes at most `limit` rows in one short statement and says how
 * many; batches follow until one finds fewer than it may take. The rows deleted in all.
 */
export const sweepInBatches = <E, R>(limit: number, deleteBatch: (limit: number) => Effect.Effect<number, E, R>): Effect.Effect<number, E, R> =>
  Effect.gen(function*() {
    let swept = 0
    for (;;) {
      const deleted = yield* deleteBatch(limit)
      swept += deleted
      if (deleted < limit) return swept
    }
  })
