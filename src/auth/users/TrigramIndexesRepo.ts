import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { tablePrefix } from "../../platform/sql/Migrator.js"

/** The trigram indexes migration 0024 makes when pg_trgm can be had: the admin list's and the audit log's filters. */
export const TRIGRAM_INDEXES = [
  "users_email_trgm_idx",
  "users_phone_trgm_idx",
  "users_full_name_trgm_idx",
  "audit_log_entries_actor_username_trgm_idx",
  "audit_log_entries_actor_name_trgm_idx"
] as const

/**
 * Which of them the database lacks (pg_trgm was not available when the migration ran): the filters they serve
 * then scan their table. Read at start-up for one warning; a failed read says nothing.
 */
const missing = (namespace: string): Effect.Effect<ReadonlyArray<string>, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const names = TRIGRAM_INDEXES.map((name) => `${tablePrefix(namespace)}${name}`)
    const found = yield* sql<{ readonly relname: string }>`SELECT c.relname FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'auth' AND c.relkind = 'i' AND ${sql.in("c.relname", names)}`
    return names.filter((name) => !found.some((row) => row.relname === name))
  }).pipe(Effect.orElseSucceed(() => []))

/** The start-up read of the trigram indexes, as a plain function over the SqlClient (as `migrate` runs). */
export const TrigramIndexesRepo = { missing } as const
