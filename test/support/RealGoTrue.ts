/**
 * The real Supabase Auth (GoTrue) binary, run by a test against a database of its own, for what only GoTrue itself can
 * show (tokens it mints, how it reads rows Gatehouse wrote). Built as shared/tools/gotrue/README.md says; tests that
 * need it skip where it is absent (CI cannot build it), which `realGoTrueMissing` says.
 */
import { execFile, spawn } from "node:child_process"
import { existsSync, realpathSync } from "node:fs"
import { createServer } from "node:net"
import { dirname, join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Redacted, Schedule, type Scope } from "effect"

const binary = [process.env["GOTRUE_BIN"], "/tmp/gotrue/auth"].find((path) => path !== undefined && path !== "" && existsSync(path))

/** GoTrue's migrations: GOTRUE_MIGRATIONS_DIR, else the source tree the binary was built from (build.sh's layout). */
const migrations = binary === undefined ? undefined : [
  process.env["GOTRUE_MIGRATIONS_DIR"],
  join(dirname(realpathSync(binary)), "src", "migrations"),
  join(dirname(binary), "src", "migrations")
].find((path) => path !== undefined && path !== "" && existsSync(path))

/** Why tests of the real GoTrue cannot run here, for their skipped names; undefined where they can. */
export const realGoTrueMissing: string | undefined = binary === undefined
  ? "SKIPPED: no GoTrue binary (GOTRUE_BIN or /tmp/gotrue/auth)"
  : migrations === undefined
  ? `SKIPPED: no GoTrue migrations beside ${binary} (set GOTRUE_MIGRATIONS_DIR)`
  : undefined

const freePort = Effect.async<number>((resume) => {
  const server = createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/**
 * What GoTrue needs of a fresh database before its migrations: the schema its namespace names, and that schema on the
 * search path (its queries name tables bare), set on this database only so no other test's database changes.
 */
const prepare = (url: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const database = new URL(url).pathname.slice(1)
    yield* sql.unsafe(`CREATE SCHEMA IF NOT EXISTS auth`)
    yield* sql.unsafe(`ALTER DATABASE "${database}" SET search_path = auth`)
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })), Effect.orDie)

export interface RunningGoTrue {
  readonly url: string
}

/**
 * Migrates the database `url` names with GoTrue's migrations and serves GoTrue on it, on a free port, until the scope
 * closes (then the process this started is stopped, by its PID). `env` is GoTrue's configuration beyond the database
 * and the address, which this sets.
 */
export const startGoTrue = (url: string, env: Readonly<Record<string, string>>): Effect.Effect<RunningGoTrue, never, Scope.Scope> =>
  Effect.gen(function*() {
    yield* prepare(url)
    const port = yield* freePort
    const fullEnv = {
      PATH: process.env["PATH"] ?? "/usr/bin:/bin",
      HOME: process.env["HOME"] ?? "/tmp",
      GOTRUE_DB_DRIVER: "postgres",
      DB_NAMESPACE: "auth",
      DATABASE_URL: `${url}${url.includes("?") ? "&" : "?"}sslmode=disable`,
      GOTRUE_DB_MIGRATIONS_PATH: migrations!,
      GOTRUE_API_HOST: "127.0.0.1",
      PORT: String(port),
      GOTRUE_API_PORT: String(port),
      API_EXTERNAL_URL: `http://127.0.0.1:${port}`,
      GOTRUE_LOG_LEVEL: "warn",
      ...env
    }
    yield* Effect.async<void, Error>((resume) => {
      execFile(binary!, ["migrate"], { env: fullEnv, timeout: 120_000 }, (error, stdout, stderr) =>
        resume(error === null ? Effect.void : Effect.fail(new Error(`gotrue migrate failed: ${stderr || stdout || error.message}`))))
    }).pipe(Effect.orDie)
    const output: Array<string> = []
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        // With no subcommand GoTrue migrates (a no-op now) and serves, as its Docker image runs it.
        const started = spawn(binary!, [], { env: fullEnv, stdio: ["ignore", "pipe", "pipe"] })
        started.stdout.on("data", (chunk: Buffer) => output.push(chunk.toString()))
        started.stderr.on("data", (chunk: Buffer) => output.push(chunk.toString()))
        return started
      }),
      (started) =>
        Effect.async<void>((resume) => {
          if (started.exitCode !== null || started.pid === undefined) return resume(Effect.void)
          const killer = setTimeout(() => process.kill(started.pid!, "SIGKILL"), 5_000)
          started.once("exit", () => {
            clearTimeout(killer)
            resume(Effect.void)
          })
          process.kill(started.pid, "SIGTERM")
        })
    )
    const health = `http://127.0.0.1:${port}/health`
    yield* Effect.tryPromise(async () => {
      if (child.exitCode !== null) throw new Error(`gotrue exited: ${output.join("").slice(-2000)}`)
      const response = await fetch(health)
      if (response.status !== 200) throw new Error(`gotrue /health answered ${response.status}`)
    }).pipe(
      Effect.retry(Schedule.spaced(Duration.millis(200)).pipe(Schedule.upTo(Duration.seconds(60)))),
      Effect.orDie
    )
    return { url: `http://127.0.0.1:${port}` }
  })
