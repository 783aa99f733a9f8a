import type * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import { deriveRefreshToken, digestRefreshToken, isGoTrueLegacyToken, sessionSigningKey } from "./RefreshTokenCodec.js"
import { type ExportedKey, SessionExportRepo } from "./SessionExportRepo.js"

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
export const exportSessions = (
  key: Buffer,
  namespace: string,
  now: Date
): Effect.Effect<SessionExportCounts, SqlError.SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    let after = "00000000-0000-0000-0000-000000000000"
    const counts = { exported: 0, gotrueTokens: 0, firstForm: 0 }
    for (;;) {
      const rows = yield* SessionExportRepo.liveSessionTokens(namespace, after, now, BATCH)
      if (rows.length === 0) break
      after = rows[rows.length - 1]!.session_id
      const exported: Array<ExportedKey> = []
      for (const row of rows) {
        if (isGoTrueLegacyToken(row.token)) counts.gotrueTokens++
        else if (digestRefreshToken(deriveRefreshToken(key, row.session_id, row.row_id)) === row.token) {
          exported.push({ id: row.session_id, key: sessionSigningKey(key, row.session_id).toString("base64url"), counter: row.row_id })
        } else counts.firstForm++
      }
      if (exported.length > 0) {
        yield* SessionExportRepo.writeKeys(namespace, exported)
        counts.exported += exported.length
      }
      if (rows.length < BATCH) break
    }
    return counts
  }).pipe(Effect.withSpan("SessionExport.exportSessions"))
