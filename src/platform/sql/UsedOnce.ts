import type * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * A table of things accepted once: a digest (primary key) held until `expires_at`, when what it stands for could no
 * longer pass its own time checks (a signed Web3 message, a SAML assertion). Kept in the database, so a replay is
 * refused by every instance; GoTrue keeps no such record for either.
 */

/**
 * Claims a digest until `expiresAt`: true for the first claim, false when it was claimed before (by any instance; a
 * concurrent claim waits for the other transaction and then loses). An expired record is as good as none: it is
 * taken over, which keeps the claim right between sweeps.
 */
export const claimOnce = (sql: SqlClient.SqlClient, table: string, digest: Uint8Array, expiresAt: Date) =>
  Effect.map(
    sql`INSERT INTO ${sql(table)} AS m (digest, expires_at) VALUES (${Buffer.from(digest)}, ${expiresAt})
      ON CONFLICT (digest) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE m.expires_at < now()
      RETURNING 1`,
    (rows) => rows.length === 1
  )

/** Deletes up to `limit` records that expired before `now`; how many it deleted. SKIP LOCKED: a claim in flight is left alone. */
export const deleteExpiredClaims = (sql: SqlClient.SqlClient, table: string, now: Date, limit: number) =>
  Effect.map(
    sql`DELETE FROM ${sql(table)} WHERE digest IN (
        SELECT digest FROM ${sql(table)} WHERE expires_at < ${now} LIMIT ${limit} FOR UPDATE SKIP LOCKED
      ) RETURNING 1`,
    (rows) => rows.length
  )
