import { existsSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import * as PgClient from "@effect/sql-pg/PgClient"
import Pg from "pg"
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { type LockHolder, lockDataDir } from "../process/DataDirLock.js"
import { registerPool } from "./PoolStatements.js"
import type { ConfigError } from "effect/ConfigError"

/**
 * The database port is @effect/sql's SqlClient (a PgClient underneath): repos and the migrator take it from
 * context and never know whether a real PostgreSQL or the embedded PGlite answers.
 */
export type Database = PgClient.PgClient | SqlClient.SqlClient

export class DatabaseUnavailable extends Data.TaggedError("DatabaseUnavailable")<{ readonly message: string }> {}

// pg's pool needs a number; GoTrue's 0 means "no limit".
const poolMax = (maxPoolSize: number): number => (maxPoolSize === 0 ? Number.MAX_SAFE_INTEGER : maxPoolSize)

const toUnavailable = (what: string) => (error: SqlError | ConfigError): DatabaseUnavailable =>
  new DatabaseUnavailable({ message: `${what}: ${error._tag === "SqlError" ? describeSqlError(error) : "bad settings"}` })

// The pg driver's messages are safe (no password), but the connection string is never printed.
const describeSqlError = (error: SqlError): string => {
  const cause = error.cause as { message?: unknown; code?: unknown } | undefined
  const message = typeof cause?.message === "string" && cause.message !== "" ? cause.message : error.message
  return typeof cause?.code === "string" ? `${message} (${cause.code})` : message
}

/** A real PostgreSQL server reached through DATABASE_URL. */
export const PostgresDatabase = (options: {
  readonly url: Redacted.Redacted<string>
  readonly maxPoolSize: number
}): Layer.Layer<Database, DatabaseUnavailable> =>
  clientOf(Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        // As PgClient.layer makes its pool (which it does not share): built here so that the hot statements can
        // run on it (PoolStatements.ts).
        const clients = new Pg.Pool({
          connectionString: Redacted.value(options.url),
          connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
          max: poolMax(options.maxPoolSize),
          application_name: "gatehouse"
        })
        // An idle connection's error (the server restarted) is the pool's to drop, not the process's to die of.
        clients.on("error", () => undefined)
        try {
          await clients.query("SELECT 1")
        } catch (cause) {
          await clients.end().catch(() => undefined)
          throw cause
        }
        return clients
      },
      catch: (cause) => new SqlError({ cause, message: "could not connect" })
    }),
    // As PgClient.layer: a connection that does not let go is left behind after a second, not waited for.
    (clients) => Effect.promise(() => clients.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
  )).pipe(Layer.mapError(toUnavailable("could not connect to PostgreSQL")))

const CONNECT_TIMEOUT_MS = 10_000

/** The SqlClient (a PgClient) on `acquire`'s pool, which it registers for PoolStatements' hot statements. */
const clientOf = (acquire: Effect.Effect<Pg.Pool, SqlError, Scope.Scope>): Layer.Layer<Database, SqlError> =>
  Layer.unwrapScoped(Effect.map(acquire, (pool) =>
    PgClient.layerFromPool({ acquire: Effect.succeed(pool), applicationName: "gatehouse" }).pipe(
      Layer.tap((context) => Effect.sync(() => registerPool(Context.get(context, PgClient.PgClient), pool)))
    )))

/**
 * PostgreSQL running in-process through PGlite, served on a loopback socket so the same pg driver talks to it.
 * `dataDir` None keeps everything in memory (tests).
 *
 * PGlite is one session, and pglite-socket mixes up the statements of concurrent connections when one of them is
 * inside a transaction (electric-sql/pglite#1046: "portal does not exist", hangs). So the pool has exactly one
 * connection: requests queue for it, which is what PGlite would do anyway. Code run on it must keep transactions
 * short and pure-DB and never query outside its transaction's connection, which is the house rule anyway.
 */
export const EmbeddedDatabase = (options: {
  readonly dataDir: Option.Option<string>
  /** How long to wait for a command (such as `migrate`) in another process to let go of the data directory. */
  readonly lockWait?: Duration.DurationInput
  /** What this process will do with the directory; default "command". */
  readonly lockHolder?: LockHolder
  /**
   * A database cluster to start an in-memory database from (a PGlite `dumpDataDir` tarball) instead of running
   * initdb, which takes seconds: the test suite makes one per run and starts each file's database from it.
   */
  readonly initialData?: Blob
}): Layer.Layer<Database, DatabaseUnavailable> =>
  Layer.unwrapScoped(Effect.gen(function*() {
    if (Option.isSome(options.dataDir)) {
      mkdirSync(options.dataDir.value, { recursive: true, mode: 0o700 })
      yield* lockDataDir(options.dataDir.value, {
        wait: options.lockWait ?? Duration.seconds(5),
        holder: options.lockHolder ?? "command"
      }).pipe(
        Effect.mapError((busy) => new DatabaseUnavailable({ message: busy.message }))
      )
    }
    const pgdata = Option.map(options.dataDir, (d) => join(d, "pgdata"))
    // Creating the database cluster (initdb, in wasm) takes seconds on the first start: said before it begins.
    if (Option.isSome(pgdata) && !existsSync(join(pgdata.value, "PG_VERSION"))) {
      yield* Effect.logInfo(`preparing the embedded database in ${pgdata.value} (first start only, a few seconds)…`)
    }
    // Imported here, not at the top: a server on a real PostgreSQL never loads PGlite (tens of megabytes).
    const { PGlite } = yield* Effect.promise(() => import("@electric-sql/pglite"))
    const { PGLiteSocketServer } = yield* Effect.promise(() => import("@electric-sql/pglite-socket"))
    const db = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          if (Option.isSome(pgdata)) mkdirSync(pgdata.value, { recursive: true, mode: 0o700 })
          // pg_trgm, for the trigram indexes of the admin list's and audit log's filters (migration 0024).
          const { pg_trgm } = await import("@electric-sql/pglite/contrib/pg_trgm")
          return PGlite.create(Option.getOrUndefined(pgdata), {
            extensions: { pg_trgm },
            ...(Option.isNone(pgdata) && options.initialData !== undefined ? { loadDataDir: options.initialData } : {}),
            // PostgreSQL's default 128 MB of shared buffers, in wasm memory that never shrinks, was most of the
            // embedded server's footprint (about 450 MB after a restart, 900 MB after initdb; 270 and 420 with
            // 16 MB). Its tables are a developer's: small, and the host's page cache holds their files anyway.
            startParams: [...PGlite.defaultStartParams, "-c", "shared_buffers=16MB"]
          })
        },
        catch: (error) => new DatabaseUnavailable({ message: `could not open the embedded database: ${String(error)}` })
      }),
      (db) => Effect.promise(() => db.close()).pipe(Effect.ignore)
    )
    const pool = 1
    const server = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: pool + 2 })
          await server.start()
          return server
        },
        catch: (error) => new DatabaseUnavailable({ message: `could not serve the embedded database: ${String(error)}` })
      }),
      (server) => Effect.promise(() => server.stop()).pipe(Effect.ignore)
    )
    const port = Number(server.getServerConn().split(":").pop())
    return clientOf(Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const clients = new Pg.Pool({
            host: "127.0.0.1",
            port,
            database: "postgres",
            user: "postgres",
            password: "embedded",
            max: pool,
            application_name: "gatehouse"
          })
          clients.on("error", () => undefined)
          // PGlite runs one statement at a time to its end: it has nothing to cancel. Without a backend key,
          // @effect/sql-pg releases an interrupted query's connection at once instead of first sending
          // pg_cancel_backend through this one-connection pool (bounded by a 5 s timeout on the Clock, which
          // under a TestClock never passes: test/iam/SessionRefresh.test.ts's teardown hung at random on PGlite,
          // and not once in 12 runs since).
          clients.on("connect", (client) => {
            ;(client as { processID?: number | undefined }).processID = undefined
          })
          await clients.query("SELECT 1")
          return clients
        },
        catch: (cause) => new SqlError({ cause, message: "could not connect" })
      }),
      (clients) => Effect.promise(() => clients.end())
    )).pipe(Layer.mapError(toUnavailable("could not connect to the embedded database")))
  }))
