import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { qualifiedTables } from "../../platform/sql/Tables.js"

/** The count table's upkeep (migration 0024): its function, named as the migrator names it. */
export class RowCountsRepo extends Effect.Service<RowCountsRepo>()("auth/RowCountsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { gatehouse_fold_row_counts: fold } = qualifiedTables("auth", (yield* PlatformConfig).db.namespace, ["gatehouse_fold_row_counts"])

    /** Folds the connections' count rows into one per part, skipping rows an open transaction holds; the sums stay. */
    const foldCounts = Effect.fn("RowCountsRepo.foldCounts")(function*() {
      yield* sql`SELECT ${sql(fold)}()`
    }, Effect.orDie)

    return { foldCounts }
  })
}) {}
