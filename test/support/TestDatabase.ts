import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Redacted } from "effect"
import { inject } from "vitest"
import { type Database, EmbeddedDatabase, PostgresDatabase } from "../../src/platform/sql/Database.js"

/** The real PostgreSQL the suite was pointed at (CI sets DATABASE_URL), if any. */
export const externalDatabaseUrl: Option.Option<string> = Option.fromNullable(process.env["DATABASE_URL"]).pipe(
  Option.filter((url) => url.trim() !== "")
)

/** A connection string to a database of the same server with another name. */
export const withDatabase = (url: string, database: string): string => {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

/**
 * A fresh database created on the server DATABASE_URL points at, dropped afterwards: test files run in
 * parallel and must not see each other's rows.
 */
export const freshDatabaseUrl = (adminUrl: string) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const name = `gatehouse_test_${randomBytes(6).toString("hex")}`
      yield* runAdmin(adminUrl, `CREATE DATABASE ${name}`)
      return { name, url: withDatabase(adminUrl, name) }
    }),
    ({ name }) => runAdmin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
  )

const runAdmin = (adminUrl: string, statement: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe(statement)
  }).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(adminUrl), maxConnections: 1 })),
    Effect.orDie
  )

// The initialised cluster test/globalSetup.ts made for this run; a file run outside vitest's projects runs initdb.
const pgliteTemplate = (): { readonly initialData?: Blob } => {
  const file = inject("pgliteTemplate")
  return file === undefined || file === "" ? {} : { initialData: new Blob([readFileSync(file)]) }
}

/**
 * The database for one test file: a fresh database on the real PostgreSQL when DATABASE_URL is set, otherwise
 * an in-memory PGlite.
 */
export const TestDatabase: Layer.Layer<Database> = Option.match(externalDatabaseUrl, {
  onNone: () => Layer.suspend(() => EmbeddedDatabase({ dataDir: Option.none(), ...pgliteTemplate() })),
  onSome: (adminUrl) =>
    Layer.unwrapScoped(Effect.map(freshDatabaseUrl(adminUrl), ({ url }) =>
      PostgresDatabase({ url: Redacted.make(url), maxPoolSize: 10 })))
}).pipe(Layer.orDie)
