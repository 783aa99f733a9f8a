import { createHash } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { type Migration, migrate, MigrationFailed, readMigrations, renderMigration } from "../../src/platform/Migrator.js"
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

  it.effect("an applied migration whose file changed stops the run", () =>
    Effect.gen(function*() {
      yield* migrate({ namespace: "edited", migrations: [migration(1, "t", "CREATE TABLE {{schema}}.{{prefix}}t (id int)")] })
      const error = yield* Effect.flip(
        migrate({ namespace: "edited", migrations: [migration(1, "t", "CREATE TABLE {{schema}}.{{prefix}}t (id bigint)")] })
      )
      expect(error.message).toContain("was changed after it was applied")
    }))

  it.effect("each product migrates into its own schema", () =>
    Effect.gen(function*() {
      yield* migrate({ namespace: "split", migrations: [migration(1, "accounts", "CREATE TABLE {{schema}}.{{prefix}}accounts (id int)", "iam")] })
      expect(yield* tableExists("iam.split_accounts")).toBe(true)
      expect(yield* appliedVersions("iam.split_gatehouse_migrations")).toEqual([1])
    }))
})
