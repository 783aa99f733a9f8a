import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { HousekeepingTask } from "../../platform/process/Housekeeping.js"
import { RowCountsRepo } from "./RowCountsRepo.js"

/**
 * The exact counts behind X-Total-Count are kept in one row per database connection that wrote (so no writer waits
 * for another); connections come and go, so every ten minutes the rows of closed ones are folded into one per part,
 * and the read sums a handful of rows however long the server has run. Once a day a recount corrects what the
 * triggers could not see.
 */
export const foldRowCountsTasks = (repo: RowCountsRepo): ReadonlyArray<HousekeepingTask> => [{
  name: "row_counts/fold",
  every: Duration.minutes(10),
  batch: () => Effect.as(repo.foldCounts(), { deleted: 0, done: true, resumeAfter: null })
}, {
  // A page is read from the nearer end by the count, so a count the triggers missed (a restore with triggers off,
  // a logical-replication apply) would shift pages, not only X-Total-Count: once a day the sums are checked against
  // the tables (two index-only counts, about a second at a million users and two million entries) and corrected.
  name: "row_counts/recount",
  every: Duration.hours(24),
  batch: () => Effect.as(repo.recount(), { deleted: 0, done: true, resumeAfter: null })
}]

export class FoldedRowCounts extends Effect.Service<FoldedRowCounts>()("auth/FoldedRowCounts", {
  effect: Effect.map(RowCountsRepo, (repo) => ({ tasks: foldRowCountsTasks(repo) })),
  dependencies: [RowCountsRepo.Default]
}) {}
