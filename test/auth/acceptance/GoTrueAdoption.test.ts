/**
 * `migrate` over a database real Supabase Auth (GoTrue v2.196.0) made (shared/fixtures/gotrue-v2.196): it recognises
 * the release from GoTrue's own migration record, reports what it found, warns about a newer GoTrue, and only adds
 * beside GoTrue's tables: every column, type, default, enum value, index and constraint GoTrue made, and every row of
 * GoTrue's columns, is as it was.
 *
 * PostgreSQL only (the dump loads with psql; PGlite has no GoTrue databases to adopt). The refusal of an unknown schema
 * is tested on both databases in test/platform/Migrator.test.ts.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, HashMap, Layer, Logger, LogLevel, Option, Redacted } from "effect"
import { migrations } from "../../../src/cli/StartupWork.js"
import { PostgresDatabase } from "../../../src/platform/sql/Database.js"
import { gotrueFixtureMissing, loadGoTrueFixture } from "../../support/GoTrueFixture.js"
import { externalDatabaseUrl } from "../../support/TestDatabase.js"
import { testConfig } from "../../support/TestServer.js"

interface Logged {
  readonly level: string
  readonly message: string
  readonly annotations: Record<string, unknown>
}

/** Runs `effect` on a fresh copy of the fixture (after `prepare`), with the log lines it wrote. */
const onFixture = <A>(effect: Effect.Effect<A, unknown, SqlClient.SqlClient>, prepare = "") =>
  Effect.scoped(Effect.gen(function*() {
    const { url } = yield* loadGoTrueFixture(Option.getOrThrow(externalDatabaseUrl))
    const logged: Array<Logged> = []
    const capture = Logger.make<unknown, void>(({ annotations, logLevel, message }) => {
      logged.push({
        level: logLevel.label,
        message: (Array.isArray(message) ? message : [message]).join(" "),
        annotations: Object.fromEntries(HashMap.toEntries(annotations))
      })
    })
    const run = Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      if (prepare !== "") yield* sql.unsafe(prepare)
      return yield* effect
    })
    const result = yield* run.pipe(
      Effect.provide(Layer.merge(
        PostgresDatabase({ url: Redacted.make(url), maxPoolSize: 2 }),
        Layer.merge(Logger.replace(Logger.defaultLogger, capture), Logger.minimumLogLevel(LogLevel.Info))
      ))
    )
    return { result, logged }
  }))

/** Everything GoTrue made in schema auth that a migration could alter: one comparable line each. */
const schemaShape = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const columns = yield* sql<{ readonly line: string }>`
    SELECT format('column %s.%s %s null=%s default=%s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
      NOT a.attnotnull, pg_get_expr(d.adbin, d.adrelid)) AS line
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE n.nspname = 'auth' AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped`
  const enums = yield* sql<{ readonly line: string }>`
    SELECT format('enum %s %s', t.typname, string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)) AS line
    FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid JOIN pg_namespace n ON n.oid = t.typnamespace
    WHERE n.nspname = 'auth' GROUP BY t.typname`
  const indexes = yield* sql<{ readonly line: string }>`
    SELECT format('index %s', indexdef) AS line FROM pg_indexes WHERE schemaname = 'auth'`
  const constraints = yield* sql<{ readonly line: string }>`
    SELECT format('constraint %s.%s %s', c.relname, k.conname, pg_get_constraintdef(k.oid)) AS line
    FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'auth'`
  return [...columns, ...enums, ...indexes, ...constraints].map((row) => row.line).sort()
})

/** Each GoTrue table's rows over the columns `shape` names: a digest per table. */
const rowDigests = (shape: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const byTable = new Map<string, Array<string>>()
    for (const line of shape) {
      const match = /^column (\w+)\.(\w+) /.exec(line)
      if (match !== null) byTable.set(match[1]!, [...(byTable.get(match[1]!) ?? []), match[2]!])
    }
    const digests: Record<string, string> = {}
    for (const [table, columns] of byTable) {
      const row = `row(${columns.map((column) => `t.${JSON.stringify(column)}`).join(", ")})::text`
      const [digest] = yield* sql.unsafe<{ readonly digest: string | null }>(
        `SELECT md5(string_agg(${row}, E'\\n' ORDER BY ${row})) AS digest FROM auth.${JSON.stringify(table)} t`
      )
      digests[table] = digest?.digest ?? "empty"
    }
    return digests
  })

const config = testConfig()

describe.skipIf(Option.isNone(externalDatabaseUrl) || gotrueFixtureMissing !== undefined)("migrate over a database GoTrue v2.196 made", () => {
  it.effect("names the release, counts GoTrue's rows, and leaves every column, enum, index, constraint and row of GoTrue's as it was", () =>
    Effect.gen(function*() {
      const { logged, result } = yield* onFixture(Effect.gen(function*() {
        const before = yield* schemaShape
        const rowsBefore = yield* rowDigests(before)
        yield* migrations(config)
        const after = yield* schemaShape
        return { before, rowsBefore, after, rowsAfter: yield* rowDigests(before) }
      }))
      // Gatehouse adds (its tables, columns, indexes); of GoTrue's nothing is missing or changed.
      const added = new Set(result.after)
      expect(result.before.filter((line) => !added.has(line))).toEqual([])
      expect(result.after.length).toBeGreaterThan(result.before.length)
      expect(Object.keys(result.rowsBefore).length).toBeGreaterThan(20)
      expect(result.rowsAfter).toEqual(result.rowsBefore)

      const messages = logged.map((line) => `${line.level} ${line.message}`)
      expect(messages[0]).toBe("INFO GoTrue's schema: made by GoTrue v2.192.0–v2.196.0 (70 migrations; the tested schema)")
      expect(messages).toContainEqual(expect.stringMatching(/^INFO migrations: applied \d+$/))
      // The fixture's users as its manifest describes them: twelve, one each anonymous, banned and soft-deleted; one
      // verified factor (mfa_user's) and its aal2 session; four pending links (signup, recovery, magic link, invite).
      expect(messages[messages.length - 1]).toMatch(
        /^INFO GoTrue's rows: 12 users \(1 anonymous, 1 banned, 1 soft-deleted\), \d+ identities, \d+ live sessions \(1 at aal2\) with \d+ refresh tokens in GoTrue's format, 1 verified factor, 4 pending links$/
      )
      expect(logged.filter((line) => line.level !== "INFO")).toEqual([])
    }), { timeout: 120_000 })

  it.effect("a GoTrue newer than the tested release is migrated with a warning naming its unknown migrations; SSO providers and OAuth clients are counted (both served)", () =>
    Effect.gen(function*() {
      const { logged } = yield* onFixture(migrations(config), `
        INSERT INTO auth.schema_migrations (version) VALUES ('20270101000000');
        INSERT INTO auth.sso_providers (id, resource_id, created_at, updated_at) VALUES (gen_random_uuid(), 'idp', now(), now());
        INSERT INTO auth.oauth_clients (id, registration_type, redirect_uris, grant_types, token_endpoint_auth_method)
          VALUES (gen_random_uuid(), 'manual', 'https://app.example.com/cb', 'authorization_code', 'none'),
                 (gen_random_uuid(), 'dynamic', 'https://old.example.com/cb', 'authorization_code', 'none');
        UPDATE auth.oauth_clients SET deleted_at = now() WHERE registration_type = 'dynamic';`)
      const warnings = logged.filter((line) => line.level === "WARN").map((line) => line.message)
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain("a GoTrue newer than GoTrue v2.196.0, the release Gatehouse is tested on")
      expect(warnings[0]).toContain("20270101000000")
      expect(logged.map((line) => line.message)).toContainEqual(expect.stringMatching(/^GoTrue's rows: .*, 1 SAML SSO provider, 1 OAuth client$/))
      expect(logged.map((line) => line.message)).toContainEqual(expect.stringMatching(/^migrations: applied \d+$/))
    }), { timeout: 120_000 })

  it.effect("a second migrate is a no-op that reports the same release and rows", () =>
    Effect.gen(function*() {
      const { logged } = yield* onFixture(Effect.zipRight(migrations(config), migrations(config)))
      const messages = logged.map((line) => line.message)
      expect(messages.filter((message) => message.startsWith("GoTrue's schema: made by GoTrue v2.192.0–v2.196.0"))).toHaveLength(2)
      expect(messages).toContain("migrations: up to date")
      expect(messages.filter((message) => message.startsWith("GoTrue's rows: 12 users"))).toHaveLength(2)
    }), { timeout: 120_000 })
})

