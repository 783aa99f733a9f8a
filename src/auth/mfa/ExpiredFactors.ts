import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { type HousekeepingTask, sweepPass } from "../../platform/process/Housekeeping.js"
import { FactorsRepo } from "../factors/FactorsRepo.js"
import { traced } from "../../platform/Traced.js"

/**
 * How long a challenge, and a factor never verified, is kept: a day, as GoTrue's cleanup. A challenge expires within
 * MFA_CHALLENGE_EXPIRY_DURATION and enrolment is abandoned after MFA_FACTOR_EXPIRY_DURATION (each enrolment also
 * drops those of every user), so this only bounds the tables when nobody enrolls.
 */
export const FACTOR_RETENTION = Duration.hours(24)

/** How often a pass begins. */
export const SWEEP_EVERY = Duration.minutes(10)

/** Rows of each table one statement deletes at most, so that a backlog is worked off in short transactions. */
export const FACTOR_LIMIT = 500

/** Old challenges and never-verified factors, as a housekeeping task (AuthHousekeeping), every SWEEP_EVERY. */
export const factorTask = (repo: FactorsRepo): HousekeepingTask => ({
  name: "mfa_challenges",
  every: SWEEP_EVERY,
  batch: (now) =>
    Effect.map(repo.sweep(new Date(now.getTime() - Duration.toMillis(FACTOR_RETENTION)), FACTOR_LIMIT), (swept) => ({
      deleted: swept.challenges + swept.factors,
      done: swept.challenges < FACTOR_LIMIT && swept.factors < FACTOR_LIMIT,
      resumeAfter: null
    }))
})

export class ExpiredFactors extends Effect.Service<ExpiredFactors>()("auth/ExpiredFactors", {
  effect: Effect.gen(function*() {
    const task = factorTask(yield* FactorsRepo)
    /** One whole pass now, outside the runner. The rows it deleted. */
    const sweep = traced("ExpiredFactors.sweep")(function*(): Effect.fn.Return<number> {
      return yield* sweepPass(task, new Date(yield* Clock.currentTimeMillis))
    })
    return { tasks: [task], sweep }
  }),
  dependencies: [FactorsRepo.Default]
}) {}
