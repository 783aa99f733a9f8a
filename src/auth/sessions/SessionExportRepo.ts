import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { authTables } from "../AuthTables.js"

/** A live session and its current refresh token row (the digest Gatehouse stores, or GoTrue's token as it is). */
export interface LiveSessionToken {
  readonly session_id: string
  readonly row_id: string
  readonly token: string
}

/** What export-sessions writes for a session: GoTrue's key (base64url) and counter. */
export interface ExportedKey {
  readonly id: string
  readonly key: string
  readonly counter: string
}

/**
 * The reads and writes of `export-sessions`, as plain functions over the SqlClient: the command runs on the server's
 * settings without starting the server's services.
 */
export const SessionExportRepo = {
  /**
   * Live sessions after `after` (by id), each with its current token: its newest unrevoked row (the index on
   * session_id, revoked serves it); sessions without one are not listed.
   */
  liveSessionTokens: (namespace: string, after: string, now: Date, limit: number) =>
    Effect.flatMap(SqlClient.SqlClient, (sql) => {
      const t = authTables(namespace)
      return sql<LiveSessionToken>`
        SELECT s.id::text AS session_id, r.id::text AS row_id, r.token
        FROM ${sql(t.sessions)} s
        JOIN LATERAL (
          SELECT id, token FROM ${sql(t.refresh_tokens)} WHERE session_id = s.id AND NOT revoked ORDER BY id DESC LIMIT 1
        ) r ON true
        WHERE s.id > ${after}::uuid AND (s.not_after IS NULL OR s.not_after > ${now})
        ORDER BY s.id
        LIMIT ${limit}`
    }),

  /**
   * Writes the keys and counters of a batch in one statement and one transaction. Three comma-joined lists are
   * unnested side by side, so no array parameter is bound (PGlite and node-postgres bind those differently); neither
   * uuids, base64url keys nor integers hold a comma.
   */
  writeKeys: (namespace: string, batch: ReadonlyArray<ExportedKey>) =>
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql`
        UPDATE ${sql(authTables(namespace).sessions)} s
        SET refresh_token_hmac_key = v.key, refresh_token_counter = v.counter
        FROM (
          SELECT unnest(string_to_array(${batch.map((e) => e.id).join(",")}, ','))::uuid AS id,
            unnest(string_to_array(${batch.map((e) => e.key).join(",")}, ',')) AS key,
            unnest(string_to_array(${batch.map((e) => e.counter).join(",")}, ','))::bigint AS counter
        ) v
        WHERE s.id = v.id`.pipe(sql.withTransaction))
}
