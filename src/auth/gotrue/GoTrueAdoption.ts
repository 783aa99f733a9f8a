import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { tablePrefix } from "../../platform/sql/Migrator.js"
import { describeGoTrueSchema, type GoTrueSchema, recognizeGoTrue } from "../domain/GoTrueRelease.js"

/**
 * Adopting a database Supabase Auth (GoTrue) made: its migration record, `auth.schema_migrations`, says which GoTrue
 * made it. Gatehouse's migrations only add beside GoTrue's tables (SchemaOwner lets them run over that record), and
 * what was found is logged, so an operator switching in place sees that the users, sessions and factors are the ones
 * they expect before any traffic arrives.
 *
 * Under a DB_NAMESPACE prefix Gatehouse's tables are its own, apart from GoTrue's: nothing is adopted then.
 */
export const readGoTrueSchema = (namespace: string): Effect.Effect<GoTrueSchema | undefined, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    if (tablePrefix(namespace) !== "") return undefined
    const sql = yield* SqlClient.SqlClient
    const [record] = yield* sql<{ readonly present: boolean }>`SELECT to_regclass('auth.schema_migrations') IS NOT NULL AS present`
    if (record?.present !== true) return undefined
    const versions = yield* sql<{ readonly version: string }>`SELECT version FROM auth.schema_migrations`
    return recognizeGoTrue(versions.map((row) => row.version))
  }).pipe(Effect.orElseSucceed(() => undefined))

/** The release found, as a warning where it is not the tested one; before the migrations run. */
export const logGoTrueSchema = (schema: GoTrueSchema): Effect.Effect<void> => {
  const { text, warning } = describeGoTrueSchema(schema)
  return warning ? Effect.logWarning(`GoTrue's schema: ${text}`) : Effect.logInfo(`GoTrue's schema: made by ${text}`)
}

interface Found {
  readonly users: string
  readonly anonymous: string
  readonly banned: string
  readonly soft_deleted: string
  readonly identities: string
  readonly live_sessions: string
  readonly aal2_sessions: string
  readonly gotrue_refresh_tokens: string
  readonly verified_factors: string
  readonly pending_links: string
}

/**
 * What the adopted database holds, counted once the migrations ran (so every table exists, whatever GoTrue release
 * made the rest). One statement; at a million users it is a few hundred milliseconds of a start-up.
 */
export const logAdoptedRows: Effect.Effect<void, never, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [found] = yield* sql<Found>`SELECT
    (SELECT count(*) FROM auth.users) AS users,
    (SELECT count(*) FROM auth.users WHERE is_anonymous) AS anonymous,
    (SELECT count(*) FROM auth.users WHERE banned_until > now()) AS banned,
    (SELECT count(*) FROM auth.users WHERE deleted_at IS NOT NULL) AS soft_deleted,
    (SELECT count(*) FROM auth.identities) AS identities,
    (SELECT count(*) FROM auth.sessions WHERE not_after IS NULL OR not_after > now()) AS live_sessions,
    (SELECT count(*) FROM auth.sessions WHERE aal = 'aal2' AND (not_after IS NULL OR not_after > now())) AS aal2_sessions,
    (SELECT count(*) FROM auth.refresh_tokens WHERE NOT revoked AND length(token) <> 64) AS gotrue_refresh_tokens,
    (SELECT count(*) FROM auth.mfa_factors WHERE status = 'verified') AS verified_factors,
    (SELECT count(*) FROM auth.one_time_tokens) AS pending_links`
  if (found === undefined) return
  const n = (value: string, one: string, many = `${one}s`) => `${Number(value)} ${Number(value) === 1 ? one : many}`
  yield* Effect.logInfo(
    `GoTrue's rows: ${n(found.users, "user")} (${Number(found.anonymous)} anonymous, ${Number(found.banned)} banned, ` +
      `${Number(found.soft_deleted)} soft-deleted), ${n(found.identities, "identity", "identities")}, ` +
      `${n(found.live_sessions, "live session")} (${Number(found.aal2_sessions)} at aal2) with ` +
      `${n(found.gotrue_refresh_tokens, "refresh token")} in GoTrue's format, ${n(found.verified_factors, "verified factor")}, ` +
      `${n(found.pending_links, "pending link")}`
  ).pipe(Effect.annotateLogs("adopted", found))
  // GoTrue features Gatehouse does not serve yet: their rows stay as GoTrue left them, and the operator hears of them.
  const [present] = yield* sql<{ readonly sso: boolean; readonly clients: boolean }>`SELECT
    to_regclass('auth.sso_providers') IS NOT NULL AS sso, to_regclass('auth.oauth_clients') IS NOT NULL AS clients`
  const count = <E>(query: Effect.Effect<ReadonlyArray<{ readonly n: string }>, E>) =>
    Effect.map(query, (rows) => Number(rows[0]?.n ?? 0))
  const sso = present?.sso === true ? yield* count(sql`SELECT count(*) AS n FROM auth.sso_providers`) : 0
  const clients = present?.clients === true
    ? yield* count(sql`SELECT count(*) AS n FROM auth.oauth_clients WHERE deleted_at IS NULL`)
    : 0
  if (sso > 0 || clients > 0) {
    yield* Effect.logWarning(
      `GoTrue's rows Gatehouse does not serve yet, kept as they are: ${sso} SAML SSO providers, ${clients} OAuth clients ` +
        `(their sign-ins answer 404 until then; a switch back to GoTrue finds them unchanged)`
    )
  }
}).pipe(
  // A report, not a step: a GoTrue schema too old to count something is still served.
  Effect.catchAll((error) => Effect.logWarning(`could not count GoTrue's rows: ${error.message}`))
)
