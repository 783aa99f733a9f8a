import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { type HousekeepingTask, sweepPass } from "../../platform/process/Housekeeping.js"
import { FlowStateRepo } from "./FlowStateRepo.js"
import { traced } from "../../platform/Traced.js"

/**
 * How long a flow_state or oauth_client_states row is kept: GoTrue's cleanup drops them a day after they were made.
 * A started OAuth flow and a PKCE code expire within minutes, and an email link within MAILER_OTP_EXP (a day by
 * default), so this drops abandoned flows, not live ones; a longer MAILER_OTP_EXP outlives its PKCE flow, as in GoTrue.
 */
export const FLOW_RETENTION = Duration.hours(24)

/** How often a pass begins. */
export const SWEEP_EVERY = Duration.minutes(10)

/** Rows of each table one statement deletes at most, so that a backlog is worked off in short transactions. */
export const FLOW_LIMIT = 500

/**
 * Expired flow_state and oauth_client_states rows, as a housekeeping task (AuthHousekeeping): one instance at a time,
 * every SWEEP_EVERY. The deletes skip the rows a request holds, so they never wait on one.
 */
export const flowTask = (repo: FlowStateRepo): HousekeepingTask => ({
  name: "flow_state",
  every: SWEEP_EVERY,
  batch: (now) =>
    Effect.map(repo.sweep(new Date(now.getTime() - Duration.toMillis(FLOW_RETENTION)), FLOW_LIMIT), (swept) => ({
      deleted: swept.flows + swept.clientStates,
      done: swept.flows < FLOW_LIMIT && swept.clientStates < FLOW_LIMIT,
      resumeAfter: null
    }))
})

export class ExpiredFlows extends Effect.Service<ExpiredFlows>()("auth/ExpiredFlows", {
  effect: Effect.gen(function*() {
    const task = flowTask(yield* FlowStateRepo)
    /** One whole pass now, outside the runner. The rows it deleted. */
    const sweep = traced("ExpiredFlows.sweep")(function*(): Effect.fn.Return<number> {
      return yield* sweepPass(task, new Date(yield* Clock.currentTimeMillis))
    })
    return { tasks: [task], sweep }
  }),
  dependencies: [FlowStateRepo.Default]
}) {}
