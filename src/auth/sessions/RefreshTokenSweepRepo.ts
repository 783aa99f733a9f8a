import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import { traced } from "../../platform/Traced.js"

/** A revoked row the sweep may delete if its digest is of Gatehouse's signed form (checked in the app). */
export interface SweepCandidate {
  readonly id: string
  readonly session_id: string
  readonly token: string
}

/**
 * The refresh_tokens sweeps' statements (housekeeping, plan §3.2). Separate from RefreshTokensRepo, which serves the
 * exchange: nothing here runs on a request.
 */
export class RefreshTokenSweepRepo extends Effect.Service<RefreshTokenSweepRepo>()("auth/RefreshTokenSweepRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = authTables((yield* PlatformConfig).db.namespace)

    /**
     * Rows of no session (GoTrue's before sessions existed, or left by a session deleted without its cascade) last
     * changed before `before`, at most `limit`: the exchange refuses them anyway. Rows a request holds are skipped.
     */
    const deleteOrphans = traced("RefreshTokenSweepRepo.deleteOrphans")(function*(before: Date, limit: number) {
      const rows = yield* sql`DELETE FROM ${sql(t.refresh_tokens)} WHERE id IN (
          SELECT id FROM ${sql(t.refresh_tokens)} WHERE session_id IS NULL AND updated_at < ${before.toISOString()}
          LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ) RETURNING 1`
      return rows.length
    }, Effect.orDie)

    /**
     * At most `limit` revoked rows with ids in (after, upTo], by id, revoked before `revokedBefore`, of a live session that holds no GoTrue
     * key, and the parent of no unrevoked row: rows no exchange could ever forgive. The parent condition is stable: a
     * revoked row never gets another child. Sessions with a key (GoTrue's, or one export-sessions wrote) are left
     * alone: their tokens without rows are judged by GoTrue's counter rules, which forgive more.
     */
    const candidates = traced("RefreshTokenSweepRepo.candidates")(function*(after: bigint, upTo: bigint, revokedBefore: Date, limit: number) {
      return yield* sql<SweepCandidate>`
        SELECT r.id::text AS id, r.session_id::text AS session_id, r.token FROM ${sql(t.refresh_tokens)} r
        WHERE r.id > ${after.toString()} AND r.id <= ${upTo.toString()} AND r.revoked AND length(r.token) = 64
          AND r.session_id IS NOT NULL AND r.updated_at < ${revokedBefore.toISOString()}
          AND NOT EXISTS (SELECT 1 FROM ${sql(t.refresh_tokens)} c WHERE c.parent = r.token AND c.revoked = false)
          AND NOT EXISTS (SELECT 1 FROM ${sql(t.sessions)} s WHERE s.id = r.session_id AND s.refresh_token_hmac_key IS NOT NULL)
        ORDER BY r.id LIMIT ${limit}`
    }, Effect.orDie)

    /** Deletes those of `ids` that are still revoked, skipping rows an exchange holds right now. */
    const deleteRevoked = traced("RefreshTokenSweepRepo.deleteRevoked")(function*(ids: ReadonlyArray<string>) {
      if (ids.length === 0) return 0
      const rows = yield* sql`DELETE FROM ${sql(t.refresh_tokens)} WHERE id IN (
          SELECT id FROM ${sql(t.refresh_tokens)} WHERE id IN ${sql.in(ids)} AND revoked FOR UPDATE SKIP LOCKED
        ) RETURNING 1`
      return rows.length
    }, Effect.orDie)

    /** The largest id (0 for an empty table): where a pass over the ids ends. */
    const maxId = traced("RefreshTokenSweepRepo.maxId")(function*() {
      const [row] = yield* sql<{ readonly id: string | null }>`SELECT max(id)::text AS id FROM ${sql(t.refresh_tokens)}`
      return BigInt(row?.id ?? "0")
    }, Effect.orDie)

    return { deleteOrphans, candidates, deleteRevoked, maxId }
  })
}) {}
