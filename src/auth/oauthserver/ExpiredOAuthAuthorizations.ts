import { Duration, Effect } from "effect"
import { sweepEvery, sweepInBatches } from "../../platform/process/SweepEvery.js"
import { OAuthServer } from "./OAuthServer.js"

/** How often each instance sweeps. */
export const SWEEP_EVERY = Duration.minutes(10)

const BATCH = 500

/**
 * Marks pending authorization requests past their expiry as expired (GoTrue's cleanup), and deletes requests that
 * ended unused a day ago: anyone may start an authorization request, so without the sweep the table only grows.
 * Every read already refuses an expired request, so the sweep changes no answer.
 */
export class ExpiredOAuthAuthorizations extends Effect.Service<ExpiredOAuthAuthorizations>()("auth/ExpiredOAuthAuthorizations", {
  scoped: Effect.gen(function*() {
    const server = yield* OAuthServer
    const sweep = Effect.fn("ExpiredOAuthAuthorizations.sweep")(function*(): Effect.fn.Return<number> {
      return yield* sweepInBatches(BATCH, (limit) => server.sweep(limit))
    })
    yield* sweepEvery(SWEEP_EVERY, "expired oauth_authorizations rows", sweep())
    return { sweep }
  })
}) {}
