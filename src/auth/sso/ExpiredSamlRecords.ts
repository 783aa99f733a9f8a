import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { deleteUpToTask, sweepPass } from "../../platform/process/Housekeeping.js"
import { SsoRepo } from "./SsoRepo.js"
import { traced } from "../../platform/Traced.js"

/** How often a pass begins. */
export const SWEEP_EVERY = Duration.minutes(10)

/** Records one statement deletes at most, so that a backlog is worked off in short transactions. */
const BATCH = 500

/** Relay states are kept a day, as GoTrue's cleanup keeps them (they are refused long before). */
const RELAY_STATES_KEPT = Duration.hours(24)

/**
 * Deletes used-assertion records that can no longer pass the time checks, and relay states older than a day, a
 * housekeeping task (AuthHousekeeping) every SWEEP_EVERY.
 */
export class ExpiredSamlRecords extends Effect.Service<ExpiredSamlRecords>()("auth/ExpiredSamlRecords", {
  effect: Effect.gen(function*() {
    const repo = yield* SsoRepo
    const task = deleteUpToTask("saml_records", SWEEP_EVERY, BATCH, (now, limit) =>
      repo.sweep(now, new Date(now.getTime() - Duration.toMillis(RELAY_STATES_KEPT)), limit))
    /** One whole pass now, outside the runner. The records it deleted. */
    const sweep = traced("ExpiredSamlRecords.sweep")(function*(): Effect.fn.Return<number> {
      return yield* sweepPass(task, new Date(yield* Clock.currentTimeMillis))
    })
    return { tasks: [task], sweep }
  }),
  dependencies: [SsoRepo.Default]
}) {}
