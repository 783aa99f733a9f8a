import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/**
 * Runs `sweep` every `interval` for as long as the scope lives, on each instance: the IAM product's clean-up of its
 * login throttle (the auth product's clean-ups are housekeeping tasks instead: Housekeeping.ts). A sweep that fails
 * is logged and the next one comes at the next interval: no sweep decides an answer, so a missed one costs only
 * space.
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
