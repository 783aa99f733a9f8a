import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { deleteUpToTask, sweepPass } from "../../platform/process/Housekeeping.js"
import { PasskeyCredentialsRepo } from "../webauthn/PasskeyCredentialsRepo.js"
import { traced } from "../../platform/Traced.js"

/** How often a pass begins. */
export const SWEEP_EVERY = Duration.minutes(10)

/** Rows one statement deletes at most, so that a backlog is worked off in short transactions. */
const BATCH = 500

/**
 * Deletes expired webauthn_challenges rows, a housekeeping task (AuthHousekeeping) every SWEEP_EVERY. A ceremony
 * nobody finished (options asked, the authenticator never answered) leaves its row behind, and anyone may ask for
 * sign-in options, so without the sweep the table only grows. Consuming a challenge already refuses an expired one:
 * the sweep changes no answer.
 */
export class ExpiredPasskeyChallenges extends Effect.Service<ExpiredPasskeyChallenges>()("auth/ExpiredPasskeyChallenges", {
  effect: Effect.gen(function*() {
    const repo = yield* PasskeyCredentialsRepo
    const task = deleteUpToTask("webauthn_challenges", SWEEP_EVERY, BATCH, (now, limit) => repo.sweepChallenges(now, limit))
    /** One whole pass now, outside the runner. How many rows it deleted. */
    const sweep = traced("ExpiredPasskeyChallenges.sweep")(function*(): Effect.fn.Return<number> {
      return yield* sweepPass(task, new Date(yield* Clock.currentTimeMillis))
    })
    return { tasks: [task], sweep }
  }),
  dependencies: [PasskeyCredentialsRepo.Default]
}) {}
