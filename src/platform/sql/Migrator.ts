import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { PACKAGE_ROOT } from "../../Package.js"
import { formerAuthPrefixMessage, schemaOwner, tablesCreatedBy, unknownSchemaMessage } from "./SchemaOwner.js"

/**
 * Each product keeps its tables in a Postgres schema of its own name, with its migrations in
 * migrations/<product>/NNNN_name.sql. `{{schema}}` and `{{prefix}}` in a file are replaced before it runs:
 * `{{prefix}}` is DB_NAMESPACE plus "_" (or nothing), so `{{schema}}.{{prefix}}users` is the users table.
 */
export const PRODUCTS = ["auth", "iam"] as const
export type Product = (typeof PRODUCTS)[number]

export interface Migration {
  readonly product: Product
  readonly version: number
  readonly name: string
  readonly sql: string
  readonly checksum: string
}

export interface AppliedMigration {
  readonly product: Product
  readonly version: number
  readonly name: string
}

export class MigrationFailed extends Data.TaggedError("MigrationFailed")<{ readonly message: string }> {}

export const MIGRATIONS_DIR = join(PACKAGE_ROOT, "migrations")

const FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/

/** Reads every product's migration files in version order; a misnamed or duplicated version is an error. */
export const readMigrations = (dir: string = MIGRATIONS_DIR): ReadonlyArray<Migration> =>
  PRODUCTS.flatMap((product) => {
    const folder = join(dir, product)
    let files: Array<string>
    try {
      files = readdirSync(folder)
    } catch {
      return []
    }
    const migrations = files.filter((f) => f.endsWith(".sql")).map((file): Migration => {
      const match = FILE.exec(file)
      if (match === null) throw new Error(`migration file ${product}/${file} is not named NNNN_name.sql`)
      const sql = readFileSync(join(folder, file), "utf8")
      return {
        product,
        version: Number(match[1]),
        name: match[2]!,
        sql,
        checksum: createHash("sha256").update(sql).digest("hex")
      }
    }).sort((a, b) => a.version - b.version)
    migrations.forEach((m, i) => {
      if (i > 0 && migrations[i - 1]!.version === m.version) {
        throw new Error(`migrations ${product}/${m.version} appear twice`)
      }
    })
    return migrations
  })

export const tablePrefix = (namespace: string): string => (namespace === "" ? "" : `${namespace}_`)

export const renderMigration = (migration: Migration, namespace: string): string =>
  migration.sql.replaceAll("{{schema}}", migration.product).replaceAll("{{prefix}}", tablePrefix(namespace))

/**
 * The migration records of other programs whose schemas Gatehouse adopts: GoTrue's (Supabase Auth) `auth` schema, whose
 * tables Gatehouse's auth migrations extend. Any other schema that holds tables is refused (SchemaOwner).
 */
export const ADOPTABLE_MARKERS: Readonly<Record<Product, ReadonlyArray<string>>> = { auth: ["schema_migrations"], iam: [] }

// One key for all Gatehouse migrators: instances starting together queue on it, so each migration runs once.
const LOCK_KEY = 7_212_386_011_917_011n

interface Row {
  readonly version: number
  readonly checksum: string
}

/**
 * Applies every pending migration, each in its own transaction under a transaction-scoped advisory lock.
 * Already-applied migrations are skipped after the lock is taken, so concurrent migrators never apply one
 * twice; a changed file that was already applied stops start-up instead of silently diverging.
 */
export const migrate = (options: {
  readonly namespace: string
  readonly migrations?: ReadonlyArray<Migration>
}): Effect.Effect<ReadonlyArray<AppliedMigration>, MigrationFailed, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const migrations = options.migrations ?? (yield* Effect.try({
      try: () => readMigrations(),
      catch: (error) => new MigrationFailed({ message: String((error as Error).message) })
    }))
    const prefix = tablePrefix(options.namespace)
    const applied: Array<AppliedMigration> = []
    const lock = sql`SELECT pg_advisory_xact_lock(${LOCK_KEY.toString()}::bigint)`

    for (const product of PRODUCTS) {
      const table = sql(`${product}.${prefix}gatehouse_migrations`)
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* lock
        // Under the lock: an instance that finds the record a concurrent one just made sees Gatehouse's schema.
        const tables = yield* sql<{ readonly name: string }>`
          SELECT c.relname AS name FROM pg_catalog.pg_class c
          JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = ${product} AND c.relkind IN ('r', 'p', 'v', 'm', 'f')`
        const own = tablesCreatedBy(migrations.filter((m) => m.product === product).map((m) => m.sql))
        const owner = schemaOwner(tables.map((row) => row.name), prefix, own, ADOPTABLE_MARKERS[product])
        if (owner._tag === "Unknown") {
          return yield* new MigrationFailed({ message: unknownSchemaMessage(product, owner.tables, ADOPTABLE_MARKERS[product]) })
        }
        if (owner._tag === "FormerAuthPrefix") return yield* new MigrationFailed({ message: formerAuthPrefixMessage(product) })
        yield* sql.unsafe(`CREATE SCHEMA IF NOT EXISTS ${product}`)
        yield* sql`CREATE TABLE IF NOT EXISTS ${table} (
          version integer PRIMARY KEY,
          name text NOT NULL,
          checksum text NOT NULL,
          applied_at timestamptz NOT NULL DEFAULT now()
        )`
      }))
      for (const migration of migrations.filter((m) => m.product === product)) {
        const label = `${product}/${String(migration.version).padStart(4, "0")}_${migration.name}`
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* lock
          const rows = yield* sql<Row>`SELECT version, checksum FROM ${table} WHERE version = ${migration.version}`
          const existing = rows[0]
          if (existing !== undefined) {
            if (existing.checksum !== migration.checksum) {
              return yield* new MigrationFailed({
                message: `migration ${label} was changed after it was applied; add a new migration instead`
              })
            }
            return
          }
          yield* sql.unsafe(renderMigration(migration, options.namespace))
          yield* sql`INSERT INTO ${table} ${sql.insert({
            version: migration.version,
            name: migration.name,
            checksum: migration.checksum
          })}`
          applied.push({ product, version: migration.version, name: migration.name })
        })).pipe(
          Effect.catchTag("SqlError", (error) =>
            new MigrationFailed({ message: `migration ${label} failed: ${sqlMessage(error.cause)}` }))
        )
      }
    }
    return applied
  }).pipe(
    Effect.catchTag("SqlError", (error) => new MigrationFailed({ message: `migrations failed: ${sqlMessage(error.cause)}` })),
    Effect.withSpan("Migrator.migrate")
  )

const sqlMessage = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "message" in cause ? String(cause.message) : "database error"
