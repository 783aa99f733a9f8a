import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { qualifiedTables } from "../../platform/sql/Tables.js"
import { authTables } from "../AuthTables.js"
import { traced } from "../../platform/Traced.js"

/** The count table's upkeep (migration 0024): folding the connections' rows, and a recount that corrects drift. */
export class RowCountsRepo extends Effect.Service<RowCountsRepo>()("auth/RowCountsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { namespace } = (yield* PlatformConfig).db
    const { gatehouse_fold_row_counts: fold } = qualifiedTables("auth", namespace, ["gatehouse_fold_row_counts"])
    const t = authTables(namespace)

    /** Folds the connections' count rows into one per part, skipping rows an open transaction holds; the sums stay. */
    const foldCounts = traced("RowCountsRepo.foldCounts")(function*() {
      yield* sql`SELECT ${sql(fold)}()`
    }, Effect.orDie)

    /**
     * Counts the rows and corrects the sums by the difference, in one statement: it reads the tables and the counts in
     * one snapshot, so the difference is exact whatever commits meanwhile (those writes' triggers count them), and it
     * is added to shard 0 as a delta, which commutes with every other writer. Writes the triggers never saw (made
     * with session_replication_role = replica, or with the triggers disabled) are counted from then on. Returns the
     * parts it corrected.
     */
    const recount = traced("RowCountsRepo.recount")(function*() {
      const rows = yield* sql<{ tbl: string; part: string }>`
        WITH actual AS (
          SELECT 'users'::text AS tbl, aud::text AS part, count(*)::bigint AS n FROM ${sql(t.users)} WHERE aud IS NOT NULL GROUP BY aud
          UNION ALL
          SELECT 'audit_log_entries', '', count(*) FROM ${sql(t.audit_log_entries)}
        ),
        counted AS (
          SELECT tbl, part, sum(n)::bigint AS n FROM ${sql(t.gatehouse_row_counts)} GROUP BY tbl, part
        ),
        drift AS (
          SELECT coalesce(a.tbl, c.tbl) AS tbl, coalesce(a.part, c.part) AS part, coalesce(a.n, 0) - coalesce(c.n, 0) AS d
          FROM actual a FULL JOIN counted c ON c.tbl = a.tbl AND c.part = a.part
        )
        INSERT INTO ${sql(t.gatehouse_row_counts)} AS c (tbl, part, shard, n)
          SELECT tbl, part, 0, d FROM drift WHERE d <> 0
          ON CONFLICT (tbl, part, shard) DO UPDATE SET n = c.n + EXCLUDED.n
        RETURNING c.tbl, c.part`
      return rows.length
    }, Effect.orDie)

    return { foldCounts, recount }
  })
}) {}
