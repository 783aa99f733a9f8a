/**
 * Migration 0024's count table stays equal to the rows whatever writes them: any sequence of multi-row inserts,
 * deletes, audience moves, upserts, unrelated updates and truncations, by statements as GoTrue or an operator would
 * send them (no Gatehouse code in the way). On PostgreSQL, a role that may write users but was never granted the
 * count table still writes (the trigger functions run as their owner).
 */
import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, FastCheck, Layer } from "effect"
import { authTables } from "../../../src/auth/AuthTables.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { externalDatabaseUrl, TestDatabase } from "../../support/TestDatabase.js"
import { testConfig } from "../../support/TestServer.js"

const t = authTables("")
const AUDS = ["authenticated", "other", null] as const

const Migrated = configLayer(testConfig()).pipe(
  Layer.provideMerge(Layer.effectDiscard(Effect.orDie(migrate({ namespace: "" })))),
  Layer.provideMerge(TestDatabase)
)

type Op =
  | { readonly _tag: "Insert"; readonly n: number; readonly aud: (typeof AUDS)[number] }
  | { readonly _tag: "Delete"; readonly aud: (typeof AUDS)[number]; readonly keep: number }
  | { readonly _tag: "Move"; readonly from: (typeof AUDS)[number]; readonly to: (typeof AUDS)[number] }
  | { readonly _tag: "Touch" }
  | { readonly _tag: "Upsert"; readonly aud: (typeof AUDS)[number] }
  | { readonly _tag: "Audit"; readonly n: number }
  | { readonly _tag: "AuditDelete" }
  | { readonly _tag: "AuditTruncate" }

const aud = FastCheck.constantFrom(...AUDS)
const op: FastCheck.Arbitrary<Op> = FastCheck.oneof(
  FastCheck.record({ _tag: FastCheck.constant("Insert" as const), n: FastCheck.integer({ min: 0, max: 5 }), aud }),
  FastCheck.record({ _tag: FastCheck.constant("Delete" as const), aud, keep: FastCheck.integer({ min: 0, max: 3 }) }),
  FastCheck.record({ _tag: FastCheck.constant("Move" as const), from: aud, to: aud }),
  FastCheck.record({ _tag: FastCheck.constant("Touch" as const) }),
  FastCheck.record({ _tag: FastCheck.constant("Upsert" as const), aud }),
  FastCheck.record({ _tag: FastCheck.constant("Audit" as const), n: FastCheck.integer({ min: 0, max: 4 }) }),
  FastCheck.record({ _tag: FastCheck.constant("AuditDelete" as const) }),
  FastCheck.record({ _tag: FastCheck.constant("AuditTruncate" as const) })
)

const literal = (value: string | null) => (value === null ? "NULL" : `'${value}'`)
const audIs = (value: string | null) => (value === null ? "aud IS NULL" : `aud = '${value}'`)

const run = (step: Op) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    switch (step._tag) {
      case "Insert":
        return yield* sql.unsafe(`INSERT INTO ${t.users} (instance_id, id, aud, role, email, created_at, updated_at, is_anonymous, is_sso_user)
          SELECT '00000000-0000-0000-0000-000000000000', gen_random_uuid(), ${literal(step.aud)}, 'authenticated', NULL, now(), now(), false, false
          FROM generate_series(1, ${step.n})`)
      case "Delete":
        return yield* sql.unsafe(`DELETE FROM ${t.users} WHERE ${audIs(step.aud)}
          AND id NOT IN (SELECT id FROM ${t.users} WHERE ${audIs(step.aud)} ORDER BY id LIMIT ${step.keep})`)
      case "Move":
        return yield* sql.unsafe(`UPDATE ${t.users} SET aud = ${literal(step.to)} WHERE ${audIs(step.from)}`)
      case "Touch":
        return yield* sql.unsafe(`UPDATE ${t.users} SET last_sign_in_at = now()`)
      case "Upsert":
        // One row new, one existing one moved: INSERT … ON CONFLICT fires the insert and the update triggers.
        return yield* sql.unsafe(`INSERT INTO ${t.users} (instance_id, id, aud, role, created_at, updated_at, is_anonymous, is_sso_user)
          SELECT '00000000-0000-0000-0000-000000000000', id, ${literal(step.aud)}, 'authenticated', now(), now(), false, false
          FROM (SELECT gen_random_uuid() AS id UNION ALL (SELECT id FROM ${t.users} ORDER BY id LIMIT 1)) picked
          ON CONFLICT (id) DO UPDATE SET aud = EXCLUDED.aud`)
      case "Audit":
        return yield* sql.unsafe(`INSERT INTO ${t.audit_log_entries} (instance_id, id, payload, created_at, ip_address)
          SELECT '00000000-0000-0000-0000-000000000000', gen_random_uuid(), '{"action":"login"}'::json, now(), '' FROM generate_series(1, ${step.n})`)
      case "AuditDelete":
        return yield* sql.unsafe(`DELETE FROM ${t.audit_log_entries} WHERE id IN (SELECT id FROM ${t.audit_log_entries} ORDER BY id LIMIT 2)`)
      case "AuditTruncate":
        return yield* sql.unsafe(`TRUNCATE ${t.audit_log_entries}`)
    }
  })

/** Per part, what the count table sums to and what the tables hold. */
const state = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const counted = yield* sql<{ tbl: string; part: string; n: string }>`SELECT tbl, part, sum(n)::text AS n
    FROM ${sql(t.gatehouse_row_counts)} GROUP BY tbl, part HAVING sum(n) <> 0 ORDER BY tbl, part`
  const actual = yield* sql<{ tbl: string; part: string; n: string }>`
    SELECT 'audit_log_entries' AS tbl, '' AS part, count(*)::text AS n FROM ${sql(t.audit_log_entries)} HAVING count(*) > 0
    UNION ALL
    SELECT 'users', aud, count(*)::text FROM ${sql(t.users)} WHERE aud IS NOT NULL GROUP BY aud
    ORDER BY 1, 2`
  return { counted: counted.map((r) => [r.tbl, r.part, r.n]), actual: actual.map((r) => [r.tbl, r.part, r.n]) }
})

describe("the count table (migration 0024)", () => {
  layer(Migrated, { timeout: 120_000 })((it) => {
    it.effect.prop("equals the rows after any sequence of writes", [FastCheck.array(op, { maxLength: 12 })], ([ops]) =>
      Effect.gen(function*() {
        for (const step of ops) yield* run(step)
        const { actual, counted } = yield* state
        expect(counted).toEqual(actual)
      }), { fastCheck: { numRuns: 25 } })

    it.effect("folding the rows of backends that are gone into one keeps every sum, and leaves live backends' rows", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* run({ _tag: "Insert", n: 3, aud: "authenticated" })
        // What two connections that have since closed left behind (no backend has these pids), netting to nothing so
        // the counts stay equal to the rows for the tests after this one.
        yield* sql`INSERT INTO ${sql(t.gatehouse_row_counts)} (tbl, part, shard, n) VALUES ('users', 'authenticated', 101, 4), ('users', 'authenticated', 202, -4)`
        const before = yield* state
        yield* sql`SELECT ${sql(`auth.gatehouse_fold_row_counts`)}()`
        expect(yield* state).toEqual(before)
        const [gone] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(t.gatehouse_row_counts)}
          WHERE shard <> 0 AND shard NOT IN (SELECT pid FROM pg_catalog.pg_stat_activity WHERE pid IS NOT NULL)`
        expect(gone!.n).toBe(0)
        // A live backend's own row stays where it is: its next write adds to it without waiting for a fold.
        const [live] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(t.gatehouse_row_counts)} c
          JOIN pg_catalog.pg_stat_activity a ON a.pid = c.shard`
        const [own] = yield* sql<{ listed: boolean }>`SELECT pg_backend_pid() IN (SELECT pid FROM pg_catalog.pg_stat_activity WHERE pid IS NOT NULL) AS listed`
        if (own!.listed) expect(live!.n).toBeGreaterThan(0)
      }))

    it.effect.skipIf(externalDatabaseUrl._tag === "None")("a role never granted the count table still writes users and audit entries", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const role = `gatehouse_writer_${Math.random().toString(36).slice(2, 8)}`
        yield* sql.unsafe(`CREATE ROLE ${role}`)
        yield* sql.unsafe(`GRANT USAGE ON SCHEMA auth TO ${role}`)
        yield* sql.unsafe(`GRANT INSERT, DELETE, SELECT, UPDATE ON ${t.users}, ${t.audit_log_entries} TO ${role}`)
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql.unsafe(`SET LOCAL ROLE ${role}`)
          yield* run({ _tag: "Insert", n: 2, aud: "authenticated" })
          yield* run({ _tag: "Move", from: "authenticated", to: "other" })
          yield* run({ _tag: "Audit", n: 2 })
          yield* run({ _tag: "AuditDelete" })
        }))
        const { actual, counted } = yield* state
        expect(counted).toEqual(actual)
      }))
  })
})
