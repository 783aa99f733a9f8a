import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { PasskeyCredentialsRepo } from "../webauthn/PasskeyCredentialsRepo.js"
import { sweepEvery, sweepInBatches } from "../../platform/process/SweepEvery.js"

/** How often each instance sweeps. */
export const SWEEP_EVERY = Duration.minutes(10)

/** Rows one statement deletes at most, so that a backlog is worked off in short transactions. */
const BATCH = 500

/**
 * Deletes expired webauthn_challenges rows, every SWEEP_EVERY on each instance. A ceremony nobody finished (options
 * asked, the authenticator never answered) leaves its row behind, and anyone may ask for sign-in options, so
 * without the sweep the table only grows. Consuming a challenge already refuses an expired one: the sweep changes
 * no answer.
 */
export class ExpiredPasskeyChallenges extends Effect.Service<ExpiredPasskeyChallenges>()("auth/ExpiredPasskeyChallenges", {
  scoped: Effect.gen(function*() {
    const repo = yield* PasskeyCredentialsRepo

    /** One sweep: batch after batch, until a batch finds less than it may take. How many rows it deleted. */
    const sweep = Effect.fn("ExpiredPasskeyChallenges.sweep")(function*(): Effect.fn.Return<number> {
      const before = new Date(yield* Clock.currentTimeMillis)
      return yield* sweepInBatches(BATCH, (limit) => repo.sweepChallenges(before, limit))
    })

    yield* sweepEvery(SWEEP_EVERY, "expired webauthn_challenges rows", sweep())

    return { sweep }
  }),
  dependencies: [PasskeyCredentialsRepo.Default]
}) {}
