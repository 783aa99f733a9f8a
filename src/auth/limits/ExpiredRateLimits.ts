import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { deleteUpToTask, sweepPass } from "../../platform/process/Housekeeping.js"
import { RateLimitsRepo } from "./RateLimitsRepo.js"
import { traced } from "../../platform/Traced.js"

/** How often a pass begins, and how long past refilling it leaves a bucket (clock skew). */
export const SWEEP_EVERY = Duration.minutes(1)

/** Buckets one statement deletes at most, so that a backlog is worked off in short transactions. */
export const RATE_LIMIT_BATCH = 1000

/**
 * The rate_limits buckets that refilled more than SWEEP_EVERY ago, a housekeeping task (AuthHousekeeping) every
 * SWEEP_EVERY. A swept bucket was full anyway, so sweeping changes no decision; the margin keeps a row another
 * instance, whose clock runs behind, still counts on.
 */
export const rateLimitTask = (repo: RateLimitsRepo) =>
  deleteUpToTask("rate_limits", SWEEP_EVERY, RATE_LIMIT_BATCH, (now, limit) => repo.sweep(now.getTime() - Duration.toMillis(SWEEP_EVERY), limit))

export class ExpiredRateLimits extends Effect.Service<ExpiredRateLimits>()("auth/ExpiredRateLimits", {
  effect: Effect.gen(function*() {
    const task = rateLimitTask(yield* RateLimitsRepo)
    /** One whole pass now, outside the runner. The buckets it deleted. */
    const sweep = traced("ExpiredRateLimits.sweep")(function*(): Effect.fn.Return<number> {
      return yield* sweepPass(task, new Date(yield* Clock.currentTimeMillis))
    })
    return { tasks: [task], sweep }
  }),
  dependencies: [RateLimitsRepo.Default]
}) {}
