/**
 * How many connections a worker's pool opens: the default DB_MAX_POOL_SIZE as the server's configuration computes it,
 * and GoTrue's explicit 0 (no limit), counted on a real PostgreSQL as the backends that served a burst of queries.
 * Each query waits on an advisory lock another session holds, so the pool cannot hand a connection back before every
 * query has asked for one. The embedded PGlite is one session whatever the setting; what matters there is that
 * concurrent transactions neither hang nor mix up their statements.
 */
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Layer, Option, Redacted, Schedule } from "effect"
import { parseAppConfig } from "../../src/config/AppConfig.js"
import { PostgresDatabase } from "../../src/platform/sql/Database.js"
import { externalDatabaseUrl, freshDatabaseUrl, TestDatabase } from "../support/TestDatabase.js"

const LOCK = 4242
const BURST = 12

/** The pool size a worker gets from the server's configuration, with AUTH_WORKERS and DB_MAX_POOL_SIZE as given. */
const poolSizeFor = (env: Record<string, string>): number =>
  Either.getOrThrow(parseAppConfig({
    DATABASE_URL: "postgres://gatehouse@db.internal:5432/auth",
    AUTH_DB_DRIVER: "postgres",
    AUTH_SITE_URL: "https://app.example.com",
    API_EXTERNAL_URL: "https://auth.example.com",
    AUTH_JWT_SECRET: "production-secret-that-is-long-enough-0123456789",
    AUTH_SMTP_ADMIN_EMAIL: "noreply@example.com",
    AUTH_SMTP_HOST: "smtp.example.com",
    AUTH_SMTP_PORT: "2525",
    ...env
  }, { cores: 2 })).config.db.maxPoolSize

/**
 * The distinct backends that answered BURST queries sent at once through a pool of `maxPoolSize`, once as many of
 * them as the pool allows were seen waiting for the lock.
 */
const backendsServing = (url: string, database: string, maxPoolSize: number) =>
  Effect.gen(function*() {
    const holder = yield* SqlClient.SqlClient
    yield* holder`SELECT pg_advisory_lock(${LOCK})`
    const pool = Context.get(yield* Layer.build(PostgresDatabase({ url: Redacted.make(url), maxPoolSize }).pipe(Layer.orDie)), SqlClient.SqlClient)
    const burst = yield* Effect.forEach(
      Array.from({ length: BURST }),
      () => pool<{ pid: number }>`SELECT pg_backend_pid() AS pid, pg_advisory_xact_lock_shared(${LOCK})`.pipe(Effect.orDie),
      { concurrency: "unbounded" }
    ).pipe(Effect.fork)
    const waiting = maxPoolSize === 0 ? BURST : Math.min(BURST, maxPoolSize)
    yield* holder<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = ${database} AND application_name = 'gatehouse' AND wait_event_type = 'Lock'`.pipe(
      Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (rows) => rows[0]!.n >= waiting })
    )
    yield* holder`SELECT pg_advisory_unlock(${LOCK})`
    const rows = (yield* burst.await.pipe(Effect.flatten)).flat()
    expect(rows).toHaveLength(BURST)
    return new Set(rows.map((row) => row.pid)).size
  }).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1, applicationName: "gatehouse-test-lock-holder" }).pipe(Layer.orDie)),
    Effect.scoped
  )

describe.skipIf(Option.isNone(externalDatabaseUrl))("a worker's connection pool on PostgreSQL", () => {
  // Live: the wait for the queries to queue up polls on the real clock.
  it.scopedLive("opens at most the default DB_MAX_POOL_SIZE connections, and one each for every query in flight when it is set to 0", () =>
    Effect.gen(function*() {
      const { name, url } = yield* freshDatabaseUrl(Option.getOrThrow(externalDatabaseUrl))
      // Sixteen workers: three connections each by default; two: ten each.
      expect(poolSizeFor({ AUTH_WORKERS: "16" })).toBe(3)
      expect(yield* backendsServing(url, name, poolSizeFor({ AUTH_WORKERS: "16" }))).toBe(3)
      expect(yield* backendsServing(url, name, poolSizeFor({ AUTH_WORKERS: "2" }))).toBe(10)
      expect(poolSizeFor({ AUTH_DB_MAX_POOL_SIZE: "0" })).toBe(0)
      expect(yield* backendsServing(url, name, 0)).toBe(BURST)
    }), { timeout: 60_000 })
})

describe.skipIf(Option.isSome(externalDatabaseUrl))("the embedded database's connection pool", () => {
  // pglite-socket once mixed up the statements of concurrent connections when one was inside a transaction ("portal
  // does not exist", or a hang), which is why the pool is one connection. Its size is not in the client's config
  // (the pool is built by hand for layerFromPool), and PGlite is one session whatever it is; what a user sees is this.
  it.scoped("runs concurrent transactions of parameterised statements, and all of them commit", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TEMPORARY TABLE pool_probe (n int NOT NULL)`
      yield* Effect.forEach(
        Array.from({ length: BURST }, (_, n) => n),
        (n) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* sql`INSERT INTO pool_probe (n) VALUES (${n})`
            yield* sql`SELECT count(*) FROM pool_probe WHERE n <= ${n}`
            yield* sql`UPDATE pool_probe SET n = n WHERE n = ${n}`
          })),
        { concurrency: "unbounded" }
      ).pipe(Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("the transactions hung") }))
      const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM pool_probe`
      expect(rows[0]!.n).toBe(BURST)
    }).pipe(Effect.provide(TestDatabase), Effect.orDie), { timeout: 60_000 })
})
