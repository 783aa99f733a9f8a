import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { FlowStateRepo, type SweptFlows } from "./FlowStateRepo.js"
import { sweepEvery } from "../../platform/process/SweepEvery.js"

/**
 * How long a flow_state or oauth_client_states row is kept: GoTrue's cleanup drops them a day after they were made.
 * A started OAuth flow and a PKCE code expire within minutes, and an email link within MAILER_OTP_EXP (a day by
 * default), so this drops abandoned flows, not live ones; a longer MAILER_OTP_EXP outlives its PKCE flow, as in GoTrue.
 */
export const FLOW_RETENTION = Duration.hours(24)

/** How often each instance sweeps. */
export const SWEEP_EVERY = Duration.minutes(10)

/** Rows of each table one statement deletes at most, so that a backlog is worked off in short transactions. */
const BATCH = 500

/**
 * Deletes expired flow_state and oauth_client_states rows, every SWEEP_EVERY on each instance (each worker of a
 * cluster too: the sweeps skip the rows another holds, so they never wait on each other).
 */
export class ExpiredFlows extends Effect.Service<ExpiredFlows>()("auth/ExpiredFlows", {
  scoped: Effect.gen(function*() {
    const repo = yield* FlowStateRepo

    /** One sweep: batch after batch, until a batch finds less than it may take. The rows it deleted. */
    const sweep = Effect.fn("ExpiredFlows.sweep")(function*(): Effect.fn.Return<SweptFlows> {
      const before = new Date((yield* Clock.currentTimeMillis) - Duration.toMillis(FLOW_RETENTION))
      let flows = 0
      let clientStates = 0
      for (;;) {
        const swept = yield* repo.sweep(before, BATCH)
        flows += swept.flows
        clientStates += swept.clientStates
        if (swept.flows < BATCH && swept.clientStates < BATCH) return { flows, clientStates }
      }
    })

    yield* sweepEvery(SWEEP_EVERY, "expired flow_state and oauth_client_states rows", sweep())

    return { sweep }
  }),
  dependencies: [FlowStateRepo.Default]
}) {}
