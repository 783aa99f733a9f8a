import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { sweepEvery, sweepInBatches } from "../../platform/process/SweepEvery.js"
import { SsoRepo } from "./SsoRepo.js"

/** How often each instance sweeps. */
export const SWEEP_EVERY = Duration.minutes(10)

/** Records one statement deletes at most, so that a backlog is worked off in short transactions. */
const BATCH = 500

/** Relay states are kept a day, as GoTrue's cleanup keeps them (they are refused long before). */
const RELAY_STATES_KEPT = Duration.hours(24)

/**
 * Deletes used-assertion records that can no longer pass the time checks, and relay states older than a day, every
 * SWEEP_EVERY on each instance.
 */
export class ExpiredSamlRecords extends Effect.Service<ExpiredSamlRecords>()("auth/ExpiredSamlRecords", {
  scoped: Effect.gen(function*() {
    const repo = yield* SsoRepo

    const sweep = Effect.fn("ExpiredSamlRecords.sweep")(function*(): Effect.fn.Return<number> {
      const now = yield* Clock.currentTimeMillis
      return yield* sweepInBatches(BATCH, (limit) => repo.sweep(new Date(now), new Date(now - Duration.toMillis(RELAY_STATES_KEPT)), limit))
    })

    yield* sweepEvery(SWEEP_EVERY, "expired saml_used_assertions and saml_relay_states rows", sweep())

    return { sweep }
  }),
  dependencies: [SsoRepo.Default]
}) {}
