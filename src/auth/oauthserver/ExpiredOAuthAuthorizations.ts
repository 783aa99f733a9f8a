import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { sweepEvery, sweepInBatches } from "../../platform/process/SweepEvery.js"
import { OAuthServerRepo } from "./OAuthServerRepo.js"

/** How often each instance sweeps. */
export const SWEEP_EVERY = Duration.minutes(10)

/** Rows one statement touches at most, so that a backlog is worked off in short transactions. */
const BATCH = 500

/**
 * Marks pending authorization requests past their expiry as expired (GoTrue's cleanup), and deletes requests that
 * ended unused a day ago: anyone may start an authorization request, so without the sweep the table only grows.
 * Every read already refuses an expired request, so the sweep changes no answer.
 */
export class ExpiredOAuthAuthorizations extends Effect.Service<ExpiredOAuthAuthorizations>()("auth/ExpiredOAuthAuthorizations", {
  scoped: Effect.gen(function*() {
    const repo = yield* OAuthServerRepo
    const sweep = Effect.fn("ExpiredOAuthAuthorizations.sweep")(function*(): Effect.fn.Return<number> {
      const now = new Date(yield* Clock.currentTimeMillis)
      return yield* sweepInBatches(BATCH, (limit) => repo.sweepAuthorizations(now, limit))
    })
    yield* sweepEvery(SWEEP_EVERY, "expired oauth_authorizations rows", sweep())
    return { sweep }
  }),
  dependencies: [OAuthServerRepo.Default]
}) {}
