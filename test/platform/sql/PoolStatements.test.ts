/**
 * PoolStatements.onPool: a hot statement runs straight on its client's pool only outside a transaction and with
 * tracing off, and then answers exactly as the statement would through @effect/sql.
 */
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Exit } from "effect"
import type Pg from "pg"
import { onPool, poolOf, registerPool } from "../../../src/platform/sql/PoolStatements.js"
import { TestDatabase } from "../../support/TestDatabase.js"

// A pool that records what it was asked and answers one row: enough to see which way a statement went.
const recordingPool = () => {
  const asked: Array<{ readonly text: string; readonly params: ReadonlyArray<unknown> }> = []
  const pool = {
    query: (text: string, params: ReadonlyArray<unknown>, callback: (error: Error | undefined, result: { rows: Array<unknown> }) => void) => {
      asked.push({ text, params })
      queueMicrotask(() => callback(undefined, { rows: [{ from: "pool" }] }))
    }
  }
  return { asked, pool: pool as unknown as Pg.Pool }
}

describe("onPool", () => {
  it.layer(TestDatabase)((it) => {
    it.effect("the server's client has its pool registered, and answers the same rows both ways", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        expect(poolOf(sql)).toBeDefined()
        const statement = () =>
          sql<{ n: number; at: Date; doc: unknown; nothing: null; text: string }>`SELECT 7::int AS n,
            ${new Date("2030-01-02T03:04:05.678Z")}::timestamptz AS at, json_build_object('a', ${"b"}::text) AS doc,
            NULL AS nothing, ${"it's"}::text AS text`
        const direct = yield* onPool(sql, statement())
        expect(direct).toEqual(yield* statement())
        expect(direct).toEqual([{ n: 7, at: new Date("2030-01-02T03:04:05.678Z"), doc: { a: "b" }, nothing: null, text: "it's" }])
      }))

    it.effect("inside a transaction it runs on the transaction's connection (it sees what the transaction wrote)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE IF NOT EXISTS pool_statements_probe (n int NOT NULL)`
        // On PostgreSQL another connection could not see the uncommitted row; on PGlite the one connection is the
        // transaction's, so a statement sent to the pool would wait for it forever.
        let seen: ReadonlyArray<{ n: number }> = []
        const rolledBack = yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO pool_statements_probe (n) VALUES (41)`
          seen = yield* onPool(sql, sql<{ n: number }>`SELECT n FROM pool_statements_probe`)
          return yield* Effect.fail("roll back" as const)
        })).pipe(Effect.either)
        expect(Either.isLeft(rolledBack)).toBe(true)
        expect(seen).toEqual([{ n: 41 }])
        expect(yield* onPool(sql, sql<{ n: number }>`SELECT n FROM pool_statements_probe`)).toEqual([])
      }))

    it.effect("a statement the server refuses fails with a SqlError, not a defect", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const exit = yield* Effect.exit(onPool(sql, sql`SELECT * FROM no_such_table_here`))
        expect(Exit.isFailure(exit)).toBe(true)
        const error = yield* Effect.flip(onPool(sql, sql`SELECT * FROM no_such_table_here`))
        expect(error).toBeInstanceOf(SqlError)
      }))

    it.effect("goes to the registered pool only outside transactions and with the tracer off", () =>
      Effect.gen(function*() {
        const real = yield* SqlClient.SqlClient
        // A client of its own (the server's is registered already), with the recording pool registered for it.
        const client: SqlClient.SqlClient = Object.assign(Object.create(real) as SqlClient.SqlClient, {})
        const { asked, pool } = recordingPool()
        registerPool(client, pool)
        const rows = yield* onPool(client, real<{ n: number }>`SELECT ${5}::int AS n`).pipe(Effect.withTracerEnabled(false))
        expect(rows).toEqual([{ from: "pool" }])
        expect(asked).toEqual([{ text: "SELECT $1::int AS n", params: [5] }])
        // Tracing on: the statement as it is (its span), on the real database.
        expect(yield* onPool(client, real<{ n: number }>`SELECT ${5}::int AS n`).pipe(Effect.withTracerEnabled(true)))
          .toEqual([{ n: 5 }])
        // In a transaction: the transaction's connection.
        expect(yield* real.withTransaction(onPool(client, real<{ n: number }>`SELECT ${6}::int AS n`)).pipe(Effect.withTracerEnabled(false)))
          .toEqual([{ n: 6 }])
        // A client nobody registered a pool for: as it is.
        const other: SqlClient.SqlClient = Object.create(real) as SqlClient.SqlClient
        expect(yield* onPool(other, real<{ n: number }>`SELECT ${8}::int AS n`).pipe(Effect.withTracerEnabled(false))).toEqual([{ n: 8 }])
        expect(asked).toHaveLength(1)
      }))
  })
})
