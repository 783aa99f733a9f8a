#!/usr/bin/env node
import { NodeRuntime } from "@effect/platform-node"
import { type Duration, Effect, Exit, Layer, Option } from "effect"
import { AppConfig, formatConfigIssues } from "./config/AppConfig.js"
import { type LoadedConfig, loadConfig } from "./config/loadConfig.js"
import { type Database, type DatabaseUnavailable, EmbeddedDatabase, PostgresDatabase } from "./platform/Database.js"
import { LoggingLive } from "./platform/Logging.js"
import { migrate } from "./platform/Migrator.js"
import { PortsLive } from "./PortsLive.js"
import { generateKeyText, runIamCommand } from "./iam/IamCli.js"
import { IamServicesLive } from "./iam/IamLive.js"
import { IamBackgroundLive, IamHttpProduct } from "./iam/IamServer.js"
import { HttpServerLive } from "./Server.js"
import { VERSION } from "./Version.js"

const USAGE = `Gatehouse ${VERSION}: a Supabase-Auth-compatible auth server and an IAM service.

Usage:
  gatehouse [serve]    start the server (applies pending migrations first)
  gatehouse migrate    apply pending database migrations and exit
  gatehouse iam bootstrap-admin --username NAME --email ADDRESS
                       create the first IAM administrator (or give an existing account the admin role);
                       the password is read from AUTH_IAM_BOOTSTRAP_ADMIN_PASSWORD or standard input
  gatehouse iam generate-key
                       print a new Ed25519 key pair for AUTH_IAM_PASETO_SECRET_KEY (PASERK)
  gatehouse --help     show this help

Configuration comes from the environment and a .env file in the working directory (the environment wins).
With no DATABASE_URL, Gatehouse runs on an embedded PostgreSQL (PGlite) kept in AUTH_DATA_DIR (./.gatehouse).
See .env.example for every setting.
`

// A second `migrate` waits for the first to release the embedded database instead of failing.
const databaseFor = (config: AppConfig, lockWait: Duration.DurationInput): Layer.Layer<Database, DatabaseUnavailable> =>
  Option.match(config.db.url, {
    onNone: () => EmbeddedDatabase({ dataDir: Option.some(config.dataDir), lockWait }),
    onSome: (url) => PostgresDatabase({ url, maxPoolSize: config.db.maxPoolSize })
  })

const migrations = (config: AppConfig) =>
  Effect.gen(function*() {
    const applied = yield* migrate({ namespace: config.db.namespace })
    yield* Effect.logInfo(applied.length === 0 ? "migrations: up to date" : `migrations: applied ${applied.length}`).pipe(
      Effect.annotateLogs("migrations", applied.map((m) => `${m.product}/${String(m.version).padStart(4, "0")}_${m.name}`))
    )
  })

const banner = ({ config, defaulted }: LoadedConfig): string =>
  [
    `Gatehouse ${VERSION} (embedded PostgreSQL in ${config.dataDir})`,
    `  listening on http://${config.api.host}:${config.api.port}`,
    ...(config.iam.enabled ? [`  IAM gRPC on ${config.iam.grpcHost}:${config.iam.grpcPort}`] : []),
    ...(defaulted.length > 0 ? ["  development defaults in use:", ...defaulted.map((d) => `    ${d}`)] : []),
    "  set DATABASE_URL (and the required settings in .env.example) to run in production"
  ].join("\n")

const serve = (loaded: LoadedConfig) => {
  const { config } = loaded
  const Database = databaseFor(config, "5 seconds")
  const Migrated = Layer.effectDiscard(migrations(config))
  // The IAM service shares the HTTP port (its /auth/... routes) and adds its gRPC port.
  const Products = config.iam.enabled
    ? Layer.merge(HttpServerLive(config, IamHttpProduct), IamBackgroundLive).pipe(Layer.provide(IamServicesLive))
    : HttpServerLive(config)
  const App = Products.pipe(
    Layer.provide(PortsLive(config)),
    Layer.provide(Migrated),
    Layer.provide(Layer.succeed(AppConfig, config)),
    Layer.provide(Database)
  )
  if (config.mode === "embedded") process.stderr.write(banner(loaded) + "\n")
  return Layer.launch(App).pipe(
    Effect.tapError((error) => Effect.logError(`start-up failed: ${startupFailure(error)}`)),
    Effect.provide(LoggingLive(config.log))
  )
}

// Start-up failures are operator errors (port taken, database down): one line, no stack trace.
const startupFailure = (error: { readonly _tag: string; readonly message: string; readonly cause?: unknown }): string =>
  error._tag === "ServeError" && error.cause instanceof Error ? `could not listen: ${error.cause.message}` : error.message

const migrateOnly = ({ config }: LoadedConfig) =>
  migrations(config).pipe(
    Effect.provide(databaseFor(config, "2 minutes")),
    Effect.tapError((error) => Effect.logError(error.message)),
    Effect.provide(LoggingLive(config.log))
  )

const main = async (argv: ReadonlyArray<string>): Promise<void> => {
  const command = argv[0] ?? "serve"
  if (command === "--help" || command === "-h" || command === "help") {
    process.stdout.write(USAGE)
    return
  }
  if (command !== "serve" && command !== "migrate" && command !== "iam") {
    process.stderr.write(`Unknown command: ${command}\n\n${USAGE}`)
    process.exitCode = 2
    return
  }
  if (command === "iam" && argv[1] === "generate-key") {
    process.stdout.write(generateKeyText())
    return
  }
  const loaded = await Effect.runPromiseExit(loadConfig({ env: process.env, envFile: ".env" }))
  if (Exit.isFailure(loaded)) {
    const issues = loaded.cause._tag === "Fail" ? loaded.cause.error.issues : [{ variable: "configuration", rule: "could not be loaded" }]
    process.stderr.write(formatConfigIssues(issues) + "\n")
    process.exitCode = 1
    return
  }
  if (command === "iam") {
    const code = await runIamCommand(argv.slice(1), loaded.value.config, {
      database: databaseFor(loaded.value.config, "2 minutes"),
      migrations: migrations(loaded.value.config),
      logging: LoggingLive(loaded.value.config.log)
    })
    process.exitCode = code
    return
  }
  const program = command === "migrate" ? migrateOnly(loaded.value) : serve(loaded.value)
  NodeRuntime.runMain(program, { disableErrorReporting: true, disablePrettyLogger: true })
}

void main(process.argv.slice(2))
