import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { deleteUpToTask, sweepPass } from "../../platform/process/Housekeeping.js"
import { OAuthServerRepo } from "./OAuthServerRepo.js"
import { traced } from "../../platform/Traced.js"

/** How often a pass begins. */
export const SWEEP_EVERY = Duration.minutes(10)

/** Rows one statement touches at most, so that a backlog is worked off in short transactions. */
const BATCH = 500

/**
 * Marks pending authorization requests past their expiry as expired (GoTrue's cleanup), and deletes requests that
 * ended unused a day ago: anyone may start an authorization request, so without the sweep the table only grows.
 * Every read already refuses an expired request, so the sweep changes no answer. A housekeeping task
 * (AuthHousekeeping), every SWEEP_EVERY.
 */
export class ExpiredOAuthAuthorizations extends Effect.Service<ExpiredOAuthAuthorizations>()("auth/ExpiredOAuthAuthorizations", {
  effect: Effect.gen(function*() {
    const repo = yield* OAuthServerRepo
    const task = deleteUpToTask("oauth_authorizations", SWEEP_EVERY, BATCH, (now, limit) => repo.sweepAuthorizations(now, limit))
    /** One whole pass now, outside the runner. The rows it marked or deleted. */
    const sweep = traced("ExpiredOAuthAuthorizations.sweep")(function*(): Effect.fn.Return<number> {
      return yield* sweepPass(task, new Date(yield* Clock.currentTimeMillis))
    })
    return { tasks: [task], sweep }
  }),
  dependencies: [OAuthServerRepo.Default]
}) {}
