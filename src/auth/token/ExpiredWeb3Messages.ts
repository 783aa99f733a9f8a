import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { deleteUpToTask, sweepPass } from "../../platform/process/Housekeeping.js"
import { Web3UsedMessagesRepo } from "./Web3UsedMessagesRepo.js"
import { traced } from "../../platform/Traced.js"

/** How often a pass begins. */
export const SWEEP_EVERY = Duration.minutes(10)

/** Records one statement deletes at most, so that a backlog is worked off in short transactions. */
const BATCH = 500

/**
 * Deletes the used-message records of Web3 sign-in messages that can no longer pass the time checks, a housekeeping
 * task (AuthHousekeeping) every SWEEP_EVERY: without it the table grows by one row per Web3 sign-in, forever.
 */
export class ExpiredWeb3Messages extends Effect.Service<ExpiredWeb3Messages>()("auth/ExpiredWeb3Messages", {
  effect: Effect.gen(function*() {
    const repo = yield* Web3UsedMessagesRepo
    const task = deleteUpToTask("web3_used_messages", SWEEP_EVERY, BATCH, (now, limit) => repo.sweep(now, limit))
    /** One whole pass now, outside the runner. The records it deleted. */
    const sweep = traced("ExpiredWeb3Messages.sweep")(function*(): Effect.fn.Return<number> {
      return yield* sweepPass(task, new Date(yield* Clock.currentTimeMillis))
    })
    return { tasks: [task], sweep }
  }),
  dependencies: [Web3UsedMessagesRepo.Default]
}) {}
