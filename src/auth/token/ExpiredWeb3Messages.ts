import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { sweepEvery, sweepInBatches } from "../../platform/process/SweepEvery.js"
import { Web3UsedMessagesRepo } from "./Web3UsedMessagesRepo.js"

/** How often each instance sweeps. */
export const SWEEP_EVERY = Duration.minutes(10)

/** Records one statement deletes at most, so that a backlog is worked off in short transactions. */
const BATCH = 500

/**
 * Deletes the used-message records of Web3 sign-in messages that can no longer pass the time checks, every
 * SWEEP_EVERY on each instance: without it the table grows by one row per Web3 sign-in, forever.
 */
export class ExpiredWeb3Messages extends Effect.Service<ExpiredWeb3Messages>()("auth/ExpiredWeb3Messages", {
  scoped: Effect.gen(function*() {
    const repo = yield* Web3UsedMessagesRepo

    /** One sweep: batch after batch, until a batch finds less than it may take. The records it deleted. */
    const sweep = Effect.fn("ExpiredWeb3Messages.sweep")(function*(): Effect.fn.Return<number> {
      const now = new Date(yield* Clock.currentTimeMillis)
      return yield* sweepInBatches(BATCH, (limit) => repo.sweep(now, limit))
    })

    yield* sweepEvery(SWEEP_EVERY, "expired web3_used_messages rows", sweep())

    return { sweep }
  }),
  dependencies: [Web3UsedMessagesRepo.Default]
}) {}
