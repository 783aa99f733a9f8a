import { createHash } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { type Migration, migrate, MigrationFailed, readMigrations, renderMigration } from "../../src/platform/sql/Migrator.js"
import { TestDatabase } from "../support/TestDatabase.js"

const migration = (version: number, name: string, sql: string, product: "auth" | "iam" = "auth"): Migration => ({
  product,
  version,
  name,
  sql,
  checksum: createHash("sha256").update(sql).digest("hex")
})

const tableExists = (qualified: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ exists: string | null }>`SELECT to_regclass(${qualified})::text AS exists`
    return rows[0]?.exists !== null
  })

const appliedVersions = (table: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ version: number }>`SELECT version FROM ${sql(table)} ORDER BY version`
    return rows.map((r) => r.version)
  })

const oneTimeTokenIndexes = (table: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ indexdef: string }>`SELECT indexdef FROM pg_indexes WHERE schemaname = 'auth' AND tablename = ${table}
      ORDER BY indexdef`
    return rows.map((r) => r.indexdef)
  })

describe("readMigrations", () => {
  it("finds the repository's migrations, numbered and in order", () => {
    const migrations = readMigrations()
    expect(migrations.length).toBeGreaterThan(0)
    for (const product of ["auth", "iam"] as const) {
      const versions = migrations.filter((m) => m.product === product).map((m) => m.version)
      expect(versions).toEqual([...versions].sort((a, b) => a - b))
      expect(new Set(versions).size).toBe(versions.length)
    }
  })

  it("renders the schema and the namespace prefix into table names", () => {
    const m = migration(1, "t", "CREATE TABLE {{schema}}.{{prefix}}users ()")
    expect(renderMigration(m, "")).toBe("CREATE TABLE auth.users ()")
    expect(renderMigration(m, "tenant")).toBe("CREATE TABLE auth.tenant_users ()")
  })
})

layer(TestDatabase, { timeout: 120_000 })("migrate", (it) => {
  it.effect("applies the repository's migrations once; a second run is a no-op", () =>
    Effect.gen(function*() {
      const first = yield* migrate({ namespace: "" })
      expect(first.map((m) => `${m.product}/${m.version}`)).toEqual(readMigrations().map((m) => `${m.product}/${m.version}`))
      const second = yield* migrate({ namespace: "" })
      expect(second).toEqual([])
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ uid: string | null }>`SELECT auth.uid()::text AS uid`
      expect(rows[0]?.uid).toBeNull()
    }))

  it.effect("DB_NAMESPACE prefixes the tables a migration creates and its bookkeeping table", () =>
    Effect.gen(function*() {
      const set = [migration(1, "widgets", "CREATE TABLE {{schema}}.{{prefix}}widgets (id int PRIMARY KEY)")]
      yield* migrate({ namespace: "tenant_a", migrations: set })
      expect(yield* tableExists("auth.tenant_a_widgets")).toBe(true)
      expect(yield* tableExists("auth.widgets")).toBe(false)
      expect(yield* appliedVersions("auth.tenant_a_gatehouse_migrations")).toEqual([1])
    }))

  it.effect("migrators racing each other apply a non-idempotent migration exactly once", () =>
    Effect.gen(function*() {
      const set = [
        migration(1, "once", "CREATE TABLE {{schema}}.{{prefix}}once (id int PRIMARY KEY); INSERT INTO {{schema}}.{{prefix}}once VALUES (1)"),
        migration(2, "twice", "INSERT INTO {{schema}}.{{prefix}}once VALUES (2)")
      ]
      const results = yield* Effect.all(
        Array.from({ length: 6 }, () => migrate({ namespace: "race", migrations: set })),
        { concurrency: "unbounded" }
      )
      expect(results.flat().map((m) => m.version).sort()).toEqual([1, 2])
      expect(yield* appliedVersions("auth.race_gatehouse_migrations")).toEqual([1, 2])
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ id: number }>`SELECT id FROM auth.race_once ORDER BY id`
      expect(rows.map((r) => r.id)).toEqual([1, 2])
    }))

  it.effect("a failing migration is rolled back and not recorded; the error names it", () =>
    Effect.gen(function*() {
      const set = [migration(1, "broken", "CREATE TABLE {{schema}}.{{prefix}}half (id int); SELECT no_such_function()")]
      const error = yield* Effect.flip(migrate({ namespace: "broken", migrations: set }))
      expect(error).toBeInstanceOf(MigrationFailed)
      expect(error.message).toContain("auth/0001_broken")
      expect(yield* tableExists("auth.broken_half")).toBe(false)
      expect(yield* appliedVersions("auth.broken_gatehouse_migrations")).toEqual([])
    }))

  it.effect("a schema holding tables named as Gatehouse's that it did not make, with no record it knows, is refused and left as it was", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe("CREATE SCHEMA IF NOT EXISTS auth; CREATE TABLE auth.foreign_users (id int); CREATE TABLE auth.foreign_ledger (id int)")
      const set = [migration(1, "users", "CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}users (id int)")]
      const error = yield* Effect.flip(migrate({ namespace: "foreign", migrations: set }))
      expect(error).toBeInstanceOf(MigrationFailed)
      expect(error.message).toContain("schema auth already holds tables named as Gatehouse's (foreign_users) that Gatehouse did not make")
      expect(error.message).toContain("DB_NAMESPACE")
      expect(yield* tableExists("auth.foreign_gatehouse_migrations")).toBe(false)
      // Tables not named as Gatehouse's are none of its business: beside foreign_ledger alone, it migrates.
      yield* sql.unsafe("DROP TABLE auth.foreign_users")
      expect(yield* migrate({ namespace: "foreign", migrations: set })).toHaveLength(1)
      expect(yield* tableExists("auth.foreign_ledger")).toBe(true)
    }))

  it.effect("the iam schema is judged alike, and GoTrue's record adopts nothing under a prefix", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe("CREATE SCHEMA IF NOT EXISTS iam; CREATE TABLE iam.stray_roles (id int)")
      const roles = [migration(1, "roles", "CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}roles (id int)", "iam")]
      const error = yield* Effect.flip(migrate({ namespace: "stray", migrations: roles }))
      expect(error.message).toContain("schema iam already holds tables named as Gatehouse's (stray_roles)")
      yield* sql.unsafe("CREATE TABLE auth.supa_users (id int); CREATE TABLE auth.supa_schema_migrations (version text)")
      const users = [migration(1, "users", "CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}users (id int)")]
      const prefixed = yield* Effect.flip(migrate({ namespace: "supa", migrations: users }))
      expect(prefixed.message).toContain("(supa_users)")
    }))

  it.effect("an applied migration whose file changed stops the run", () =>
    Effect.gen(function*() {
      yield* migrate({ namespace: "edited", migrations: [migration(1, "t", "CREATE TABLE {{schema}}.{{prefix}}t (id int)")] })
      const error = yield* Effect.flip(
        migrate({ namespace: "edited", migrations: [migration(1, "t", "CREATE TABLE {{schema}}.{{prefix}}t (id bigint)")] })
      )
      expect(error.message).toContain("was changed after it was applied")
    }))

  it.effect("auth 0014 makes GoTrue's one_time_tokens: its enum, columns, unique key and hash indexes", () =>
    Effect.gen(function*() {
      yield* migrate({ namespace: "" })
      const sql = yield* SqlClient.SqlClient
      const labels = yield* sql<{ readonly label: string }>`SELECT e.enumlabel AS label FROM pg_enum e
        JOIN pg_type t ON t.oid = e.enumtypid WHERE t.typname = 'one_time_token_type' ORDER BY e.enumsortorder`
      expect(labels.map((row) => row.label)).toEqual([
        "confirmation_token",
        "reauthentication_token",
        "recovery_token",
        "email_change_token_new",
        "email_change_token_current",
        "phone_change_token"
      ])
      const columns = yield* sql<{ readonly name: string; readonly type: string; readonly nullable: string }>`SELECT column_name AS name,
          data_type AS type, is_nullable AS nullable FROM information_schema.columns
        WHERE table_schema = 'auth' AND table_name = 'one_time_tokens' ORDER BY ordinal_position`
      expect(columns.map((c) => [c.name, c.type, c.nullable])).toEqual([
        ["id", "uuid", "NO"],
        ["user_id", "uuid", "NO"],
        ["token_type", "USER-DEFINED", "NO"],
        ["token_hash", "text", "NO"],
        ["relates_to", "text", "NO"],
        ["created_at", "timestamp without time zone", "NO"],
        ["updated_at", "timestamp without time zone", "NO"]
      ])
      expect(yield* oneTimeTokenIndexes("one_time_tokens")).toEqual([
        // 0023's, for housekeeping's sweep of expired rows.
        "CREATE INDEX one_time_tokens_created_at_idx ON auth.one_time_tokens USING btree (created_at)",
        "CREATE INDEX one_time_tokens_relates_to_hash_idx ON auth.one_time_tokens USING hash (relates_to)",
        "CREATE INDEX one_time_tokens_token_hash_hash_idx ON auth.one_time_tokens USING hash (token_hash)",
        "CREATE UNIQUE INDEX one_time_tokens_pkey ON auth.one_time_tokens USING btree (id)",
        "CREATE UNIQUE INDEX one_time_tokens_user_id_token_type_key ON auth.one_time_tokens USING btree (user_id, token_type)"
      ])
    }))

  it.effect("auth 0014 keeps the one_time_tokens a database GoTrue created first, rows and all", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const auth = readMigrations().filter((m) => m.product === "auth")
      yield* migrate({ namespace: "gotrue", migrations: auth.filter((m) => m.version < 14) })
      // GoTrue v2.196's own schema for the table (pg_dump of a database it migrated), under this test's prefix.
      yield* sql.unsafe(`
        CREATE TYPE auth.gotrue_one_time_token_type AS ENUM ('confirmation_token', 'reauthentication_token', 'recovery_token',
          'email_change_token_new', 'email_change_token_current', 'phone_change_token');
        CREATE TABLE auth.gotrue_one_time_tokens (
          id uuid NOT NULL,
          user_id uuid NOT NULL,
          token_type auth.gotrue_one_time_token_type NOT NULL,
          token_hash text NOT NULL,
          relates_to text NOT NULL,
          created_at timestamp without time zone DEFAULT now() NOT NULL,
          updated_at timestamp without time zone DEFAULT now() NOT NULL,
          CONSTRAINT gotrue_one_time_tokens_token_hash_check CHECK ((char_length(token_hash) > 0))
        );
        ALTER TABLE ONLY auth.gotrue_one_time_tokens ADD CONSTRAINT gotrue_one_time_tokens_pkey PRIMARY KEY (id);
        CREATE INDEX gotrue_one_time_tokens_relates_to_hash_idx ON auth.gotrue_one_time_tokens USING hash (relates_to);
        CREATE INDEX gotrue_one_time_tokens_token_hash_hash_idx ON auth.gotrue_one_time_tokens USING hash (token_hash);
        CREATE UNIQUE INDEX gotrue_one_time_tokens_user_id_token_type_key ON auth.gotrue_one_time_tokens USING btree (user_id, token_type);
        ALTER TABLE ONLY auth.gotrue_one_time_tokens
          ADD CONSTRAINT gotrue_one_time_tokens_user_id_fkey FOREIGN KEY (user_id) REFERENCES auth.gotrue_users(id) ON DELETE CASCADE;
        ALTER TABLE auth.gotrue_one_time_tokens ENABLE ROW LEVEL SECURITY;
        INSERT INTO auth.gotrue_users (id, email) VALUES ('00000000-0000-4000-8000-00000000000a', 'gotrue@example.com');
        INSERT INTO auth.gotrue_one_time_tokens (id, user_id, token_type, token_hash, relates_to)
          VALUES ('00000000-0000-4000-8000-00000000000b', '00000000-0000-4000-8000-00000000000a', 'recovery_token', 'abc', 'gotrue@example.com');
      `)
      const applied = yield* migrate({ namespace: "gotrue", migrations: auth })
      expect(applied.map((m) => m.version)).toEqual(auth.filter((m) => m.version >= 14).map((m) => m.version))
      const rows = yield* sql<{ readonly token_type: string; readonly token_hash: string }>`SELECT token_type::text AS token_type, token_hash
        FROM auth.gotrue_one_time_tokens`
      expect(rows).toEqual([{ token_type: "recovery_token", token_hash: "abc" }])
      // GoTrue's four, and 0023's created_at index for housekeeping.
      expect(yield* oneTimeTokenIndexes("gotrue_one_time_tokens")).toHaveLength(5)
    }))

  it.effect("each product migrates into its own schema", () =>
    Effect.gen(function*() {
      yield* migrate({ namespace: "split", migrations: [migration(1, "accounts", "CREATE TABLE {{schema}}.{{prefix}}accounts (id int)", "iam")] })
      expect(yield* tableExists("iam.split_accounts")).toBe(true)
      expect(yield* appliedVersions("iam.split_gatehouse_migrations")).toEqual([1])
    }))
})
