import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import { traced } from "../../platform/Traced.js"

/**
 * The sessions sweeps' statements (housekeeping, plan §3.2). Deleting a session cascades to its refresh tokens and
 * amr claims, in GoTrue's schema as in Gatehouse's. Times are handed in as UTC text: sessions.refreshed_at is GoTrue's
 * `timestamp without time zone` holding UTC in a database GoTrue made, and text read as it ignores the zone.
 */
export class SessionSweepRepo extends Effect.Service<SessionSweepRepo>()("auth/SessionSweepRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = authTables((yield* PlatformConfig).db.namespace)

    /** Sessions whose not_after passed before `before`, at most `limit` (through sessions_not_after_idx). */
    const deleteExpired = traced("SessionSweepRepo.deleteExpired")(function*(before: Date, limit: number) {
      const rows = yield* sql`DELETE FROM ${sql(t.sessions)} WHERE id IN (
          SELECT id FROM ${sql(t.sessions)} WHERE not_after < ${before.toISOString()} LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ) RETURNING 1`
      return rows.length
    }, Effect.orDie)

    /**
     * Of the next `limit` sessions by id after `after`: those that can never be refreshed again and were last active
     * before `before`: no GoTrue key (signed tokens have no rows) and no unrevoked token. The last id looked at, for
     * the next batch (null: the end of the table).
     */
    const deleteDead = traced("SessionSweepRepo.deleteDead")(function*(after: string, before: Date, limit: number) {
      const at = before.toISOString()
      const [row] = yield* sql<{ readonly deleted: number; readonly last: string | null }>`
        WITH walked AS (
          SELECT id, created_at, refreshed_at, refresh_token_hmac_key FROM ${sql(t.sessions)}
          WHERE id > ${after}::uuid ORDER BY id LIMIT ${limit}
        ), dead AS (
          SELECT w.id FROM walked w
          WHERE w.refresh_token_hmac_key IS NULL AND w.created_at < ${at} AND (w.refreshed_at IS NULL OR w.refreshed_at < ${at})
            AND NOT EXISTS (SELECT 1 FROM ${sql(t.refresh_tokens)} r WHERE r.session_id = w.id AND r.revoked = false)
        ), gone AS (
          DELETE FROM ${sql(t.sessions)} WHERE id IN (SELECT id FROM ${sql(t.sessions)} WHERE id IN (SELECT id FROM dead) FOR UPDATE SKIP LOCKED)
          RETURNING 1
        )
        SELECT (SELECT count(*) FROM gone)::int AS deleted, (SELECT id::text FROM walked ORDER BY id DESC LIMIT 1) AS last`
      return { deleted: row?.deleted ?? 0, last: row?.last ?? null }
    }, Effect.orDie)

    return { deleteExpired, deleteDead }
  })
}) {}
