import { Duration, Effect } from "effect"
import type { HousekeepingTask } from "../../platform/process/Housekeeping.js"
import { RowCountsRepo } from "./RowCountsRepo.js"

/**
 * The exact counts behind X-Total-Count are kept in one row per database connection that wrote (so no writer waits
 * for another); connections come and go, so every ten minutes their rows are folded into one per part, and the read
 * sums a handful of rows however long the server has run.
 */
export const foldRowCountsTasks = (repo: RowCountsRepo): ReadonlyArray<HousekeepingTask> => [{
  name: "row_counts/fold",
  every: Duration.minutes(10),
  batch: () => Effect.as(repo.foldCounts(), { deleted: 0, done: true, resumeAfter: null })
}]

export class FoldedRowCounts extends Effect.Service<FoldedRowCounts>()("auth/FoldedRowCounts", {
  effect: Effect.map(RowCountsRepo, (repo) => ({ tasks: foldRowCountsTasks(repo) })),
  dependencies: [RowCountsRepo.Default]
}) {}
