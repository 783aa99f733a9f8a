import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import { traced } from "../../platform/Traced.js"

/** Rows each statement of one batch deleted. */
export interface SweptOneTimeRows {
  readonly oneTimeTokens: number
  readonly pendingTokens: number
  readonly otpAttempts: number
}

/**
 * The one-time rows' sweep (housekeeping, plan §3.2), through the created_at / updated_at indexes of migration 0023.
 * one_time_tokens.created_at is GoTrue's `timestamp without time zone` holding UTC: the bound is handed in as UTC
 * text, which that type reads without its zone.
 */
export class OneTimeRowSweepRepo extends Effect.Service<OneTimeRowSweepRepo>()("auth/OneTimeRowSweepRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = authTables((yield* PlatformConfig).db.namespace)

    /** At most `limit` rows of each table made (or last counted) before `before`; rows a request holds are skipped. */
    const sweep = traced("OneTimeRowSweepRepo.sweep")(function*(before: Date, limit: number) {
      const at = before.toISOString()
      const [row] = yield* sql<{ readonly one_time: number; readonly pending: number; readonly attempts: number }>`
        WITH one_time AS (
          DELETE FROM ${sql(t.one_time_tokens)} WHERE id IN (
            SELECT id FROM ${sql(t.one_time_tokens)} WHERE created_at < ${at} LIMIT ${limit} FOR UPDATE SKIP LOCKED
          ) RETURNING 1
        ), pending AS (
          DELETE FROM ${sql(t.pending_tokens)} WHERE (user_id, token_kind) IN (
            SELECT user_id, token_kind FROM ${sql(t.pending_tokens)} WHERE created_at < ${at} LIMIT ${limit} FOR UPDATE SKIP LOCKED
          ) RETURNING 1
        ), attempts AS (
          DELETE FROM ${sql(t.otp_attempts)} WHERE (user_id, token_kind) IN (
            SELECT user_id, token_kind FROM ${sql(t.otp_attempts)} WHERE updated_at < ${at} LIMIT ${limit} FOR UPDATE SKIP LOCKED
          ) RETURNING 1
        )
        SELECT (SELECT count(*) FROM one_time)::int AS one_time, (SELECT count(*) FROM pending)::int AS pending,
          (SELECT count(*) FROM attempts)::int AS attempts`
      return { oneTimeTokens: row?.one_time ?? 0, pendingTokens: row?.pending ?? 0, otpAttempts: row?.attempts ?? 0 }
    }, Effect.orDie)

    return { sweep }
  })
}) {}
