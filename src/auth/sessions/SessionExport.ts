import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { authTables } from "../AuthTables.js"
import { deriveRefreshToken, digestRefreshToken, isGoTrueLegacyToken, sessionSigningKey } from "./RefreshTokenCodec.js"

/** What `export-sessions` did, counted by session. */
export interface SessionExportCounts {
  /** Sessions whose key and counter were written: GoTrue exchanges the token their app holds. */
  readonly exported: number
  /** Sessions holding one of GoTrue's own 12-character tokens, which GoTrue reads as it is. */
  readonly gotrueTokens: number
  /** Sessions whose current token is of Gatehouse's first (43-character) form, which GoTrue cannot read. */
  readonly firstForm: number
}

const BATCH = 5_000

/**
 * The way back to GoTrue for sessions: every live session's current Gatehouse refresh token is in GoTrue's signed form,
 * signed with a key derived for the session and counted by its row id (RefreshTokenCodec), so writing that key and
 * that id into the session row's `refresh_token_hmac_key` and `refresh_token_counter` is all GoTrue needs to exchange
 * it. Run with Gatehouse stopped (a rotation after it moves the session's token past the counter written; running it
 * again writes the new one). It is idempotent, and keyed by session id in batches, one transaction each.
 *
 * The keys written are what GoTrue itself stores for such sessions; until this runs the database holds no key, so
 * a leaked copy of it holds no usable token.
 */
export const exportSessions = (key: Buffer, namespace: string, now: Date): Effect.Effect<SessionExportCounts, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = authTables(namespace)
    let after = "00000000-0000-0000-0000-000000000000"
    const counts = { exported: 0, gotrueTokens: 0, firstForm: 0 }
    for (;;) {
      // The session's current token: its newest unrevoked row (the index on session_id, revoked serves it).
      const rows = yield* sql<{ readonly session_id: string; readonly row_id: string; readonly token: string }>`
        SELECT s.id::text AS session_id, r.id::text AS row_id, r.token
        FROM ${sql(t.sessions)} s
        JOIN LATERAL (
          SELECT id, token FROM ${sql(t.refresh_tokens)} WHERE session_id = s.id AND NOT revoked ORDER BY id DESC LIMIT 1
        ) r ON true
        WHERE s.id > ${after}::uuid AND (s.not_after IS NULL OR s.not_after > ${now})
        ORDER BY s.id
        LIMIT ${BATCH}`
      if (rows.length === 0) break
      after = rows[rows.length - 1]!.session_id
      const exported: Array<{ readonly id: string; readonly key: string; readonly counter: string }> = []
      for (const row of rows) {
        if (isGoTrueLegacyToken(row.token)) counts.gotrueTokens++
        else if (digestRefreshToken(deriveRefreshToken(key, row.session_id, row.row_id)) === row.token) {
          exported.push({ id: row.session_id, key: sessionSigningKey(key, row.session_id).toString("base64url"), counter: row.row_id })
        } else counts.firstForm++
      }
      if (exported.length > 0) {
        // Three comma-joined lists unnested side by side: one statement per batch, and no array parameters (which
        // PGlite and node-postgres bind differently). Neither uuids, base64url keys nor integers hold a comma.
        yield* sql`
          UPDATE ${sql(t.sessions)} s
          SET refresh_token_hmac_key = v.key, refresh_token_counter = v.counter
          FROM (
            SELECT unnest(string_to_array(${exported.map((e) => e.id).join(",")}, ','))::uuid AS id,
              unnest(string_to_array(${exported.map((e) => e.key).join(",")}, ',')) AS key,
              unnest(string_to_array(${exported.map((e) => e.counter).join(",")}, ','))::bigint AS counter
          ) v
          WHERE s.id = v.id`.pipe(sql.withTransaction)
        counts.exported += exported.length
      }
      if (rows.length < BATCH) break
    }
    return counts
  }).pipe(Effect.orDie, Effect.withSpan("SessionExport.exportSessions"))
