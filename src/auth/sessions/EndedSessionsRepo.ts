import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import type { FeedStart } from "../domain/RevocationFeed.js"
import { traced } from "../../platform/Traced.js"

export interface EndedSession {
  readonly xid: bigint
  readonly sessionId: string
  readonly userId: string
  readonly endedAt: Date
}

export interface EndedSessionsPage {
  readonly rows: ReadonlyArray<EndedSession>
  /**
   * Every transaction of this database below it has finished, and only their rows are listed (see `page` for why
   * not the snapshot's xmin).
   */
  readonly horizon: bigint
}

/**
 * gatehouse_ended_sessions (migration 0027), which the trigger on sessions fills: the revocation feed's page, and
 * housekeeping's delete of rows no access token can outlive.
 */
export class EndedSessionsRepo extends Effect.Service<EndedSessionsRepo>()("auth/EndedSessionsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = authTables((yield* PlatformConfig).db.namespace)

    /** Up to `limit` rows from `start`, in (xid, session_id) order, of transactions below the horizon. */
    const page = traced("EndedSessionsRepo.page")(function*(start: FeedStart, limit: number) {
      // The horizon: below it, every transaction of this database that could write a row has finished. The
      // snapshot's xmin would do, but it is the whole cluster's: a long transaction in another database (a
      // migration, a report) would hold the feed back for as long as it runs. So: the oldest transaction the
      // snapshot sees running that is this database's (pg_stat_activity's backend_xid, the low 32 bits of its
      // xid8), else the snapshot's xmax. A transaction that started after the snapshot has an xid at or above xmax.
      const [snapshot] = yield* sql<{ readonly horizon: string }>`
        WITH s AS (SELECT pg_current_snapshot() AS snap)
        SELECT COALESCE(
          (SELECT min(x) FROM s, pg_snapshot_xip(s.snap) AS x
            WHERE (x::text::numeric % 4294967296) IN (
              SELECT backend_xid::text::numeric FROM pg_stat_activity
              WHERE datname = current_database() AND backend_xid IS NOT NULL)),
          (SELECT pg_snapshot_xmax(snap) FROM s))::text AS horizon`
      const horizon = snapshot!.horizon
      const from = start._tag === "Since"
        ? sql`AND ended_at >= ${start.at}`
        : start._tag === "After"
        ? sql`AND (xid, session_id) > (${start.position.xid.toString()}::xid8, ${start.position.sessionId}::uuid)`
        : sql``
      const rows = yield* sql<{ readonly xid: string; readonly session_id: string; readonly user_id: string; readonly ended_at: Date }>`
        SELECT xid::text AS xid, session_id::text AS session_id, user_id::text AS user_id, ended_at
        FROM ${sql(t.gatehouse_ended_sessions)}
        WHERE xid < ${horizon}::xid8 ${from}
        ORDER BY xid, session_id LIMIT ${limit}`
      return {
        rows: rows.map((row): EndedSession => ({ xid: BigInt(row.xid), sessionId: row.session_id, userId: row.user_id, endedAt: row.ended_at })),
        horizon: BigInt(horizon)
      } satisfies EndedSessionsPage
    }, Effect.orDie)

    /** Rows of sessions that ended before `before`, at most `limit` (through the ended_at index). */
    const deleteBefore = traced("EndedSessionsRepo.deleteBefore")(function*(before: Date, limit: number) {
      const rows = yield* sql`DELETE FROM ${sql(t.gatehouse_ended_sessions)} WHERE (xid, session_id) IN (
          SELECT xid, session_id FROM ${sql(t.gatehouse_ended_sessions)} WHERE ended_at < ${before} LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ) RETURNING 1`
      return rows.length
    }, Effect.orDie)

    return { page, deleteBefore } as const
  })
}) {}
