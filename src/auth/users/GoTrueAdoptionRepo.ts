import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { tablePrefix } from "../../platform/sql/Migrator.js"
import type { AdoptedRows } from "../domain/GoTrueRelease.js"

/**
 * The reads of adopting a database Supabase Auth (GoTrue) made: its migration record, `auth.schema_migrations`, and
 * counts of what it holds.
 *
 * Under a DB_NAMESPACE prefix Gatehouse's tables are its own, apart from GoTrue's: nothing is adopted then.
 */
const migrationRecord = (namespace: string): Effect.Effect<ReadonlyArray<string> | undefined, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    if (tablePrefix(namespace) !== "") return undefined
    const sql = yield* SqlClient.SqlClient
    const [record] = yield* sql<{ readonly present: boolean }>`SELECT to_regclass('auth.schema_migrations') IS NOT NULL AS present`
    if (record?.present !== true) return undefined
    const versions = yield* sql<{ readonly version: string }>`SELECT version FROM auth.schema_migrations`
    return versions.map((row) => row.version)
  }).pipe(Effect.orElseSucceed(() => undefined))

/**
 * What the adopted database holds, counted once the migrations ran (so every table exists, whatever GoTrue release
 * made the rest). One statement reading each table once, plus one each for the SSO providers and OAuth clients where
 * their tables exist.
 */
const adoptedRows: Effect.Effect<AdoptedRows, unknown, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // One scan per table (FILTER), not one per count: the users table is read once even at a million rows.
  const [found] = yield* sql<Record<string, string>>`SELECT u.*, s.*, i.identities, r.gotrue_refresh_tokens, f.verified_factors,
      o.pending_links,
      to_regclass('auth.sso_providers') IS NOT NULL AS has_sso, to_regclass('auth.oauth_clients') IS NOT NULL AS has_clients
    FROM (SELECT count(*) AS users, count(*) FILTER (WHERE is_anonymous) AS anonymous,
        count(*) FILTER (WHERE banned_until > now()) AS banned, count(*) FILTER (WHERE deleted_at IS NOT NULL) AS soft_deleted
        FROM auth.users) u,
      (SELECT count(*) AS live_sessions, count(*) FILTER (WHERE aal = 'aal2') AS aal2_sessions
        FROM auth.sessions WHERE not_after IS NULL OR not_after > now()) s,
      (SELECT count(*) AS identities FROM auth.identities) i,
      (SELECT count(*) AS gotrue_refresh_tokens FROM auth.refresh_tokens WHERE NOT revoked AND length(token) <> 64) r,
      (SELECT count(*) AS verified_factors FROM auth.mfa_factors WHERE status = 'verified') f,
      (SELECT count(*) AS pending_links FROM auth.one_time_tokens) o`
  const n = (key: string) => Number(found?.[key] ?? 0)
  const count = <E>(query: Effect.Effect<ReadonlyArray<{ readonly n: string }>, E>) => Effect.map(query, (rows) => Number(rows[0]?.n ?? 0))
  return {
    users: n("users"),
    anonymous: n("anonymous"),
    banned: n("banned"),
    softDeleted: n("soft_deleted"),
    identities: n("identities"),
    liveSessions: n("live_sessions"),
    aal2Sessions: n("aal2_sessions"),
    gotrueRefreshTokens: n("gotrue_refresh_tokens"),
    verifiedFactors: n("verified_factors"),
    pendingLinks: n("pending_links"),
    ssoProviders: found?.["has_sso"] as unknown === true ? yield* count(sql`SELECT count(*) AS n FROM auth.sso_providers`) : 0,
    oauthClients: found?.["has_clients"] as unknown === true
      ? yield* count(sql`SELECT count(*) AS n FROM auth.oauth_clients WHERE deleted_at IS NULL`)
      : 0
  }
})

/**
 * The reads of adopting a GoTrue database, as plain functions over the SqlClient, not a service: `migrate` runs them
 * on the database settings alone, before and after the migrations.
 */
export const GoTrueAdoptionRepo = { migrationRecord, adoptedRows } as const
