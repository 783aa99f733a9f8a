import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { FactorsRepo } from "../factors/FactorsRepo.js"
import { sweepEvery } from "../../platform/process/SweepEvery.js"

/**
 * How long a challenge, and a factor never verified, is kept: a day, as GoTrue's cleanup. A challenge expires within
 * MFA_CHALLENGE_EXPIRY_DURATION and enrolment is abandoned after MFA_FACTOR_EXPIRY_DURATION (each enrolment also
 * drops those of every user), so this only bounds the tables when nobody enrolls.
 */
export const FACTOR_RETENTION = Duration.hours(24)

/** How often each instance sweeps. */
export const SWEEP_EVERY = Duration.minutes(10)

/** Deletes old challenges and never-verified factors every SWEEP_EVERY on each instance. */
export class ExpiredFactors extends Effect.Service<ExpiredFactors>()("auth/ExpiredFactors", {
  scoped: Effect.gen(function*() {
    const repo = yield* FactorsRepo

    const sweep = Effect.fn("ExpiredFactors.sweep")(function*(): Effect.fn.Return<void> {
      yield* repo.sweep(new Date((yield* Clock.currentTimeMillis) - Duration.toMillis(FACTOR_RETENTION)))
    })

    yield* sweepEvery(SWEEP_EVERY, "old MFA challenges and unverified factors", sweep())

    return { sweep }
  }),
  dependencies: [FactorsRepo.Default]
}) {}
