/**
 * The database real Supabase Auth (GoTrue v2.196.0) made, from shared/fixtures/gotrue-v2.196 (its README says how it
 * was made and what each user is): loaded into a fresh database of the PostgreSQL that DATABASE_URL names, for the
 * tests that check Gatehouse takes over a GoTrue database as it is. Only psql can load it (pg_dump 15 writes
 * `\restrict` meta-commands), so it needs a real server, never PGlite.
 */
import { execFile } from "node:child_process"
import { createHash, randomInt, randomUUID } from "node:crypto"
import { existsSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Redacted, Schema, type Scope } from "effect"
import { freshDatabaseUrl } from "./TestDatabase.js"

const FIXTURE = "fixtures/gotrue-v2.196"

/**
 * The fixture's folder. The shared folder sits beside the repository (`<repo>/../shared`, as beside a worktree or
 * a CI clone), or is linked into it (`<repo>/shared`).
 */
const FIXTURE_CANDIDATES = (() => {
  const repo = fileURLToPath(new URL("../../", import.meta.url))
  return [join(repo, "shared", FIXTURE), join(repo, "..", "shared", FIXTURE)]
})()

const foundFixture = FIXTURE_CANDIDATES.find((dir) => existsSync(join(dir, "manifest.json")))

/**
 * Why the fixture's tests cannot run here (a clone without the project's shared folder beside it), for their skipped
 * tests' names; undefined where the fixture is (CI has it).
 */
export const gotrueFixtureMissing: string | undefined = foundFixture === undefined
  ? `SKIPPED: no GoTrue fixture at ${FIXTURE_CANDIDATES.join(" or ")}`
  : undefined

export const gotrueFixtureDir: string = foundFixture ?? FIXTURE_CANDIDATES[0]!

const Credentials = Schema.Struct({ id: Schema.String, email: Schema.String, password: Schema.String })
const PendingLink = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  email_otp: Schema.String,
  hashed_token: Schema.String,
  verification_type: Schema.String
})
const TotpUser = Schema.Struct({ ...Credentials.fields, factor_id: Schema.String, totp_secret: Schema.String })

/** manifest.json: what a test needs to act as each user of the fixture. */
export const GoTrueManifest = Schema.Struct({
  gotrue: Schema.String,
  /** When the calls that made the rows ran (the dump's age counts from here). */
  generated_at: Schema.DateFromString,
  /** The HS256 secret GoTrue signed its access tokens with (a public test value). */
  jwt_secret: Schema.String,
  users: Schema.Struct({
    password_user: Schema.Struct({
      ...Credentials.fields,
      user_metadata_given: Schema.Struct({ display_name: Schema.String }),
      refresh_tokens: Schema.Struct({
        session_a_revoked_parent: Schema.String,
        session_a_current: Schema.String,
        session_b_current: Schema.String
      }),
      access_token: Schema.String
    }),
    editor: Schema.Struct({
      ...Credentials.fields,
      app_metadata_set: Schema.Struct({ roles: Schema.Array(Schema.String), plan: Schema.String })
    }),
    phone_user: Schema.Struct({ id: Schema.String, phone: Schema.String, password: Schema.String, refresh_token: Schema.String }),
    anonymous: Schema.Struct({ id: Schema.String, refresh_token: Schema.String, access_token: Schema.String }),
    banned: Schema.Struct({ ...Credentials.fields, refresh_token_before_ban: Schema.String }),
    pending_signup: Schema.Struct({ ...PendingLink.fields, password: Schema.String, action_link: Schema.String }),
    pending_recovery: Schema.Struct({ ...PendingLink.fields, password: Schema.String }),
    pending_magiclink: PendingLink,
    pending_invite: PendingLink,
    mfa_user: Schema.Struct({
      ...TotpUser.fields,
      /** Exactly the URI GoTrue answered the enrolment with (issuer "fixture"). */
      totp_uri: Schema.String,
      /** The refresh token of the aal2 session that verified the factor. */
      aal2_refresh_token: Schema.String,
      aal1_note: Schema.String
    }),
    mfa_unverified: TotpUser,
    soft_deleted: Credentials
  })
})
export type GoTrueManifest = typeof GoTrueManifest.Type

/** The fixture's manifest, read and checked once. */
/** The manifest; only read by tests that skip when gotrueFixtureMissing says why (it is undefined then). */
export const gotrueManifest: GoTrueManifest = (foundFixture === undefined
  ? undefined
  : Schema.decodeUnknownSync(GoTrueManifest)(JSON.parse(readFileSync(join(foundFixture, "manifest.json"), "utf8")))) as GoTrueManifest

export interface LoadedGoTrueFixture {
  /** A database of its own holding GoTrue's `auth` schema and rows, and nothing of Gatehouse's yet. */
  readonly url: string
  readonly manifest: GoTrueManifest
}

/**
 * A fresh database on the server `adminUrl` names, loaded with the fixture's schema.sql then data.sql by psql, and
 * dropped when the scope closes.
 */
export const loadGoTrueFixture = (adminUrl: string): Effect.Effect<LoadedGoTrueFixture, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { url } = yield* freshDatabaseUrl(adminUrl)
    yield* psqlFile(url, join(gotrueFixtureDir, "schema.sql"))
    yield* psqlFile(url, join(gotrueFixtureDir, "data.sql"))
    return { url, manifest: gotrueManifest }
  })

/**
 * The psql of scripts/pg.sh's PostgreSQL 15 (PG_BIN, or Debian's place for it), else the one on PATH. Only a psql of
 * the August 2025 minor releases or later (15.14, 16.10, 17.6, …) knows `\restrict`.
 */
const PSQL = [join(process.env["PG_BIN"] ?? "/usr/lib/postgresql/15/bin", "psql"), "/usr/lib/postgresql/15/bin/psql"]
  .find((path) => existsSync(path)) ?? "psql"

const psqlFile = (url: string, file: string): Effect.Effect<void> =>
  Effect.async<void, Error>((resume) => {
    // -X: no ~/.psqlrc to change how the script runs.
    execFile(PSQL, ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-f", file], (error, _stdout, stderr) =>
      resume(error === null ? Effect.void : Effect.fail(new Error(`psql -f ${file} failed: ${stderr || error.message}`))))
  }).pipe(Effect.orDie)

/**
 * How old GoTrue's codes are made by moveSentAtForward: sent an hour before the switch, as a project's last mails
 * before it moves are. A code sent after Gatehouse took the database over is Gatehouse's own, and GoTrue's form of a
 * link (the code's hash) is taken only for codes sent before (LinkToken.acceptsLegacyLink).
 */
export const SENT_BEFORE_SWITCH = Duration.hours(1)

/**
 * Moves every time a pending code is judged by forward by the dump's age (now − generated_at), less
 * SENT_BEFORE_SWITCH: all `*_sent_at` columns of the `auth` schema and `one_time_tokens.created_at`. GoTrue made
 * the link codes with a day to live (MAILER_OTP_EXP=86400), so without this they are expired in any run more than a
 * day after the fixture was made. Returns the shift.
 */
export const moveSentAtForward = (url: string, now: Date = new Date()): Effect.Effect<Duration.Duration> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const age = (now.getTime() - gotrueManifest.generated_at.getTime()) / 1000
    const seconds = Math.max(0, age - Duration.toSeconds(SENT_BEFORE_SWITCH))
    const columns = yield* sql<{ readonly table: string; readonly column: string }>`
      SELECT c.table_name AS table, c.column_name AS column
      FROM information_schema.columns c
      JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = 'auth' AND t.table_type = 'BASE TABLE'
        AND (right(c.column_name, 8) = '_sent_at' OR (c.table_name = 'one_time_tokens' AND c.column_name = 'created_at'))`
    yield* sql.withTransaction(Effect.forEach(columns, ({ table, column }) => {
      const target = sql(column)
      return sql`UPDATE ${sql(`auth.${table}`)} SET ${target} = ${target} + make_interval(secs => ${seconds})
        WHERE ${target} IS NOT NULL`
    }, { discard: true }))
    return Duration.seconds(seconds)
  }).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })),
    Effect.orDie
  )

/** A user's pending-token columns, as GoTrue's verify reads and clears them. */
export interface TokenColumns {
  readonly confirmation_token: string | null
  readonly recovery_token: string | null
  readonly email_change_token_new: string | null
  readonly email_change_token_current: string | null
  readonly email_change: string | null
  readonly email_change_confirm_status: number | null
}

/** What GoTrue keeps of a user's pending tokens: the users columns and the one_time_tokens rows. */
export interface PendingState {
  readonly columns: TokenColumns
  readonly oneTimeTokens: ReadonlyArray<{ readonly token_type: string; readonly token_hash: string; readonly relates_to: string }>
}

export const pendingState = (userId: string): Effect.Effect<PendingState, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [columns] = yield* sql<TokenColumns>`SELECT confirmation_token, recovery_token, email_change_token_new,
        email_change_token_current, email_change, email_change_confirm_status
      FROM auth.users WHERE id = ${userId}`
    const oneTimeTokens = yield* sql<PendingState["oneTimeTokens"][number]>`SELECT token_type::text AS token_type,
        token_hash, relates_to FROM auth.one_time_tokens WHERE user_id = ${userId} ORDER BY token_type`
    return { columns: columns!, oneTimeTokens }
  }).pipe(Effect.orDie)

/** GoTrue's stored form of a code sent to `address` (internal/crypto GenerateTokenHash): hex sha224(address + code). */
export const gotrueTokenHash = (address: string, otp: string): string =>
  createHash("sha224").update(address + otp).digest("hex")

export interface PendingEmailChange {
  readonly current: { readonly email: string; readonly otp: string; readonly tokenHash: string }
  readonly next: { readonly email: string; readonly otp: string; readonly tokenHash: string }
}

/**
 * An email change pending as GoTrue v2.196 leaves it with MAILER_SECURE_EMAIL_CHANGE_ENABLED on, an implicit flow
 * (internal/api/mail.go sendEmailChange, models.CreateOneTimeToken): both codes' hashes in the users columns,
 * email_change the new address, email_change_confirm_status 0, email_change_sent_at `sentAt`, and one
 * one_time_tokens row per half, relates_to the address that half went to, lower-cased. Written by SQL, as GoTrue
 * would have written it before the switch.
 */
export const writePendingEmailChange = (
  user: { readonly id: string; readonly email: string },
  newEmail: string,
  sentAt: Date
): Effect.Effect<PendingEmailChange, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const code = () => String(randomInt(0, 1_000_000)).padStart(6, "0")
    const current = { email: user.email, otp: code() }
    const next = { email: newEmail, otp: code() }
    const change: PendingEmailChange = {
      current: { ...current, tokenHash: gotrueTokenHash(current.email, current.otp) },
      next: { ...next, tokenHash: gotrueTokenHash(next.email, next.otp) }
    }
    yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`UPDATE auth.users SET email_change = ${newEmail}, email_change_token_new = ${change.next.tokenHash},
          email_change_token_current = ${change.current.tokenHash}, email_change_confirm_status = 0,
          email_change_sent_at = ${sentAt}, updated_at = ${sentAt}
        WHERE id = ${user.id}`
      for (
        const [type, half] of [["email_change_token_current", change.current], ["email_change_token_new", change.next]] as const
      ) {
        // GoTrue's CreateOneTimeToken: the user's earlier row of the type goes, a new one with a new id comes.
        yield* sql`DELETE FROM auth.one_time_tokens WHERE user_id = ${user.id} AND token_type = ${type}::auth.one_time_token_type`
        yield* sql`INSERT INTO auth.one_time_tokens (id, user_id, token_type, token_hash, relates_to, created_at, updated_at)
          VALUES (${randomUUID()}, ${user.id}, ${type}::auth.one_time_token_type, ${half.tokenHash}, ${half.email.toLowerCase()},
            ${sentAt}::timestamptz AT TIME ZONE 'UTC', ${sentAt}::timestamptz AT TIME ZONE 'UTC')`
      }
    }))
    return change
  }).pipe(Effect.orDie)

/** Replaces a user's encrypted_password, as a hash another system made would arrive. */
export const setEncryptedPassword = (userId: string, hash: string): Effect.Effect<void, never, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE auth.users SET encrypted_password = ${hash} WHERE id = ${userId}`).pipe(
    Effect.asVoid,
    Effect.orDie
  )
