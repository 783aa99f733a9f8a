import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { deleteUpToTask, sweepPass } from "../../platform/process/Housekeeping.js"
import { RecipientSendsRepo } from "./RecipientSendsRepo.js"
import { traced } from "../../platform/Traced.js"

/** How often a pass begins, and how long past its expiry it leaves a row (clock skew). */
export const RECIPIENT_SWEEP_EVERY = Duration.minutes(1)

/** Rows one statement deletes at most, so that a backlog is worked off in short transactions. */
export const RECIPIENT_SEND_BATCH = 1000

/**
 * The recipient_sends rows whose sends had all aged out more than RECIPIENT_SWEEP_EVERY ago, a housekeeping task
 * (AuthHousekeeping) every RECIPIENT_SWEEP_EVERY. Such a row counts nothing, so sweeping changes no decision; the
 * margin keeps a row another instance, whose clock runs behind, still counts on.
 */
export const recipientSendTask = (repo: RecipientSendsRepo) =>
  deleteUpToTask(
    "recipient_sends",
    RECIPIENT_SWEEP_EVERY,
    RECIPIENT_SEND_BATCH,
    (now, limit) => repo.sweep(now.getTime() - Duration.toMillis(RECIPIENT_SWEEP_EVERY), limit)
  )

export class ExpiredRecipientSends extends Effect.Service<ExpiredRecipientSends>()("auth/ExpiredRecipientSends", {
  effect: Effect.gen(function*() {
    const task = recipientSendTask(yield* RecipientSendsRepo)
    /** One whole pass now, outside the runner. The rows it deleted. */
    const sweep = traced("ExpiredRecipientSends.sweep")(function*(): Effect.fn.Return<number> {
      return yield* sweepPass(task, new Date(yield* Clock.currentTimeMillis))
    })
    return { tasks: [task], sweep }
  }),
  dependencies: [RecipientSendsRepo.Default]
}) {}
