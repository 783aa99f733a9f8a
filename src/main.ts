#!/usr/bin/env node
import { defaultTeardown, type Teardown } from "@effect/platform/Runtime"
import { NodeRuntime } from "@effect/platform-node"
import { HttpServer } from "@effect/platform"
import { Clock, Context, type Duration, Effect, Exit, Layer, Option } from "effect"
import { OAUTH_PROVIDER_SPECS } from "./auth/oauth/OAuthProviders.js"
import { API_KEY_ROLES, apiKeyClaims, apiKeyIssuer } from "./auth/sessions/ApiKeys.js"
import { type AppConfig, configLayer, formatConfigIssues } from "./config/AppConfig.js"
import { type ConfigInvalid, type LoadedConfig, loadConfig, loadDatabaseSettings } from "./config/loadConfig.js"
import type { DatabaseSettings } from "./config/PlatformConfig.js"
import type { LockHolder } from "./platform/process/DataDirLock.js"
import { type Database, type DatabaseUnavailable, EmbeddedDatabase, PostgresDatabase } from "./platform/sql/Database.js"
import { listenFailure } from "./platform/process/ListenFailure.js"
import { LoggingLive } from "./platform/Logging.js"
import { migrate } from "./platform/sql/Migrator.js"
import { BcryptPasswordHasher } from "./platform/PasswordHasher.js"
import { TokenSigner } from "./platform/TokenSigner.js"
import { outboxPageUrl } from "./platform/http/OutboxHttp.js"
import { mailToOutbox, outboxEnabled, PortsLive, textsToOutbox, tokenSignerFor } from "./platform/PortsLive.js"
import { TelemetryLive } from "./platform/Telemetry.js"
import { freePorts, ignoreRepeatedSignals, reportReady, reportStartupFailure, runWorkers, workerId } from "./platform/process/Workers.js"
import { generateKeyText, runIamCommand } from "./iam/IamCli.js"
import { IamGrpcAddress, IamGrpcServerLive } from "./iam/grpc/GrpcServer.js"
import { IamConfiguredAdminLive, IamServicesLive } from "./iam/IamLive.js"
import { IamBackgroundLive } from "./iam/IamServer.js"
import { AuthAndIamRoutesLive, AuthRoutesLive, HttpServerLive, outboxFor } from "./Server.js"
import { VERSION } from "./Version.js"

const USAGE = `Gatehouse ${VERSION}: a Supabase-Auth-compatible auth server and an IAM service.

Usage:
  gatehouse [serve]    start the server (applies pending migrations first)
  gatehouse multi      serve in GoTrue's multi-instance mode: every request but /health must carry the
                       operator's signature (header x-nf-sign, a JWT signed HS256 with AUTH_OPERATOR_TOKEN,
                       which the mode requires); AUTH_API_ENDPOINT says where the operator reaches the API
  gatehouse migrate    apply pending database migrations and exit (needs only the database settings)
  gatehouse keys       print the anon and service_role API keys for Supabase clients, signed with the
                       configured JWT secret (or the signing key in AUTH_JWT_KEYS)
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

// A second `migrate` waits for the first to release the embedded database instead of failing; an embedded
// database held by a running server is refused at once (see lockDataDir).
const databaseFor = (
  config: DatabaseSettings,
  lock: { readonly wait: Duration.DurationInput; readonly holder: LockHolder }
): Layer.Layer<Database, DatabaseUnavailable> =>
  Option.match(config.db.url, {
    onNone: () => EmbeddedDatabase({ dataDir: Option.some(config.dataDir), lockWait: lock.wait, lockHolder: lock.holder }),
    onSome: (url) => PostgresDatabase({ url, maxPoolSize: config.db.maxPoolSize })
  })

const migrations = (config: DatabaseSettings) =>
  Effect.gen(function*() {
    const applied = yield* migrate({ namespace: config.db.namespace })
    yield* Effect.logInfo(applied.length === 0 ? "migrations: up to date" : `migrations: applied ${applied.length}`).pipe(
      Effect.annotateLogs("migrations", applied.map((m) => `${m.product}/${String(m.version).padStart(4, "0")}_${m.name}`))
    )
  })

/** The ports the server ended up on (a configured port may be 0). */
interface Bound {
  readonly http: number
  readonly grpc: Option.Option<number>
}

const banner = ({ config, defaulted }: LoadedConfig, bound: Bound): string =>
  [
    `Gatehouse ${VERSION} (embedded PostgreSQL in ${config.dataDir})`,
    `  listening on http://${config.api.host}:${bound.http}`,
    ...Option.match(bound.grpc, { onNone: () => [], onSome: (port) => [`  IAM gRPC on ${config.iam.grpcHost}:${port}`] }),
    ...(outboxEnabled(config)
      ? [`  ${
        mailToOutbox(config) && textsToOutbox(config) ? "mail and texts are" : mailToOutbox(config) ? "mail is" : "texts are"
      } not delivered: read them at ${outboxPageUrl(config.api.host, bound.http)}`]
      : []),
    ...(defaulted.length > 0 ? ["  development defaults in use:", ...defaulted.map((d) => `    ${d}`)] : []),
    "  API keys for Supabase clients: `node dist/main.js keys` prints the anon and service_role keys",
    "  set DATABASE_URL (and the required settings in .env.example) to run in production",
    `  Ctrl-C stops the server; to start over with no data, stop it and delete ${config.dataDir}`
  ].join("\n")

/**
 * The ports one serving process listens on, over the database. A single process also does the start-up work that
 * must run once per start, not once per process (the migrations and the configured IAM admin) and logs the address;
 * in a cluster the primary does both and the workers only serve.
 */
const serverLayer = (config: AppConfig, Database: Layer.Layer<Database, DatabaseUnavailable>, role: "single" | "worker") => {
  const single = role === "single"
  const Migrated = single ? Layer.effectDiscard(migrations(config)) : Layer.empty
  // The IAM service shares the HTTP port (its /auth/... routes) and adds its gRPC port.
  const Products = config.iam.enabled
    ? Layer.merge(
      HttpServerLive(config, AuthAndIamRoutesLive(config), { logAddress: single }),
      single ? IamBackgroundLive : IamGrpcServerLive
    ).pipe(Layer.provide(IamServicesLive))
    : HttpServerLive(config, AuthRoutesLive(config), { logAddress: single })
  return Products.pipe(
    Layer.provide(TelemetryLive(config, { role: single ? "single" : "worker" })),
    Layer.provide(PortsLive(config)),
    Layer.provide(outboxFor(config)),
    Layer.provide(Migrated),
    Layer.provide(configLayer(config)),
    Layer.provide(Database)
  )
}

/** What start-up says about the mode besides the warnings: multi-instance mode and where the operator calls. */
const modeNotes = (config: AppConfig): Effect.Effect<void> =>
  config.multiInstance
    ? Effect.logInfo("multi-instance mode: every request but /health must be signed by the operator (x-nf-sign)").pipe(
      Effect.annotateLogs(Option.match(config.api.endpoint, { onNone: () => ({}), onSome: (endpoint) => ({ operator_endpoint: endpoint }) }))
    )
    : Effect.void

const serve = (loaded: LoadedConfig) => {
  const { config } = loaded
  const App = serverLayer(config, databaseFor(config, { wait: "5 seconds", holder: "server" }), "single")
  // The banner says "listening on": only once that is true, so a server refused its data directory or its port
  // prints the reason alone.
  const serving = (built: Context.Context<HttpServer.HttpServer>): Effect.Effect<void> =>
    config.mode !== "embedded" ? Effect.void : Effect.sync(() => {
      const { address } = Context.get(built, HttpServer.HttpServer)
      const http = address._tag === "TcpAddress" ? address.port : config.api.port
      const grpc = Option.map(Context.getOption(built, IamGrpcAddress), ({ port }) => port)
      process.stderr.write(banner(loaded, { http, grpc }) + "\n")
    })
  // Settings that start but will fail later (GoTrue starts with them too): said once, before serving.
  return Effect.forEach(loaded.warnings, (warning) => Effect.logWarning(warning), { discard: true }).pipe(
    Effect.zipRight(modeNotes(config)),
    Effect.zipRight(Effect.scoped(Layer.build(App).pipe(Effect.flatMap(serving), Effect.zipRight(Effect.never))).pipe(
      Effect.onInterrupt(() => stopped)
    )),
    Effect.tapError((error) => Effect.logError(`start-up failed: ${startupFailure(config, error)}`)),
    Effect.provide(LoggingLive(config.log))
  )
}

/**
 * Production with AUTH_WORKERS > 1, in the primary: the once-only start-up work, then the workers, supervised. The
 * primary keeps no database connection and listens on nothing itself (node:cluster binds the workers' ports in it).
 */
const servePrimary = (loaded: LoadedConfig) => {
  const { config } = loaded
  // The configured IAM admin is made here, once: workers making it together would race for its username.
  const { email, password, username } = config.iam.bootstrapAdmin
  const adminConfigured = config.iam.enabled && Option.isSome(email) && Option.isSome(password) && Option.isSome(username)
  const Once = (adminConfigured
    ? IamConfiguredAdminLive.pipe(Layer.provide(IamServicesLive), Layer.provide(BcryptPasswordHasher()))
    : Layer.empty).pipe(
      Layer.provide(Layer.effectDiscard(migrations(config))),
      Layer.provide(configLayer(config)),
      Layer.provide(databaseFor(config, { wait: "5 seconds", holder: "server" }))
    )
  const iamPort = config.iam.enabled && config.iam.grpcPort === 0
  const ports = Effect.map(
    freePorts([...(config.api.port === 0 ? [config.api.host] : []), ...(iamPort ? [config.iam.grpcHost] : [])]),
    (free) => ({
      http: config.api.port === 0 ? free[0]! : config.api.port,
      grpc: iamPort ? free[free.length - 1]! : config.iam.grpcPort
    })
  )
  return Effect.forEach(loaded.warnings, (warning) => Effect.logWarning(warning), { discard: true }).pipe(
    Effect.zipRight(modeNotes(config)),
    Effect.zipRight(Effect.scoped(Layer.build(Once))),
    Effect.zipRight(ports),
    Effect.tapError((error) => Effect.logError(`start-up failed: ${startupFailure(config, error)}`)),
    Effect.flatMap(({ grpc, http }) =>
      Effect.logInfo(`starting ${config.workers} workers`).pipe(
        Effect.zipRight(runWorkers({
          count: config.workers,
          // The worker's environment wins over .env, and AUTH_ over every other spelling.
          env: { AUTH_API_PORT: String(http), AUTH_IAM_GRPC_PORT: String(grpc) },
          // As a single process says it, once every worker serves.
          serving: Effect.logInfo(`Listening on http://${config.api.host}:${http}`).pipe(
            Effect.annotateLogs({ workers: config.workers, ...(config.iam.enabled ? { grpc: `${config.iam.grpcHost}:${grpc}` } : {}) })
          )
        })),
        // The primary serves the Prometheus scrape for all workers (ClusterMetrics).
        Effect.provide(TelemetryLive(config, { role: "primary" })),
        Effect.tapError((error) => Effect.logError(error.message)),
        Effect.onInterrupt(() => stopped)
      )),
    Effect.provide(LoggingLive(config.log))
  )
}

/**
 * In a cluster worker: the server without the once-only work, its log lines marked with the worker id. It tells
 * the primary when it serves, or why it could not start (the primary logs that once for all workers).
 */
const serveWorker = (loaded: LoadedConfig, id: number) => {
  const { config } = loaded
  const App = serverLayer(config, databaseFor(config, { wait: "5 seconds", holder: "server" }), "worker")
  return Effect.scoped(Layer.build(App).pipe(Effect.zipRight(reportReady), Effect.zipRight(Effect.never))).pipe(
    Effect.onInterrupt(() => stopped),
    Effect.tapError((error) => reportStartupFailure(startupFailure(config, error))),
    Effect.annotateLogs("worker", id),
    Effect.provide(LoggingLive(config.log))
  )
}

// Said once the ports are closed and the requests in flight have been answered (a signal interrupts the server).
const stopped = Effect.logInfo("stopped: requests in flight answered, connections closed")

// Start-up failures are operator errors (port taken, database down): one line, no stack trace.
const startupFailure = (
  config: AppConfig,
  error: { readonly _tag: string; readonly message: string; readonly cause?: unknown }
): string =>
  error._tag === "ServeError" && error.cause instanceof Error
    ? listenFailure(config.api, "PORT (or AUTH_API_PORT)", error.cause)
    : error.message

const migrateOnly = (config: DatabaseSettings) =>
  migrations(config).pipe(
    Effect.provide(databaseFor(config, { wait: "2 minutes", holder: "command" })),
    Effect.tapError((error) => Effect.logError(error.message)),
    Effect.provide(LoggingLive(config.log))
  )

/**
 * `keys`: Supabase's two API keys, signed as the server signs access tokens, so they verify against it. The
 * embedded default's secret comes from the data directory, the same file the server reads.
 */
const printKeys = async (config: AppConfig): Promise<number> => {
  const program = Effect.gen(function*() {
    const signer = yield* TokenSigner
    const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const issuer = apiKeyIssuer(config.jwt.issuer, config.api.externalUrl)
    return yield* Effect.forEach(API_KEY_ROLES, (role) =>
      Effect.map(signer.sign(apiKeyClaims(role, issuer, now)), (key) => `${role} key: ${key}\n`))
  }).pipe(Effect.provide(tokenSignerFor(config)))
  const exit = await Effect.runPromiseExit(program)
  if (Exit.isFailure(exit)) {
    const failure = exit.cause._tag === "Fail" ? exit.cause.error.message : "unexpected error"
    process.stderr.write(`keys failed: ${failure}\n`)
    return 1
  }
  process.stdout.write(exit.value.join(""))
  process.stderr.write("The service_role key bypasses row-level security and acts as an admin: keep it secret, never ship it in an app.\n")
  return 0
}

// One message naming every broken variable, then exit code 1; None tells the caller to stop.
const loadOrReport = async <A>(load: Effect.Effect<A, ConfigInvalid>): Promise<Option.Option<A>> => {
  const loaded = await Effect.runPromiseExit(load)
  if (Exit.isSuccess(loaded)) return Option.some(loaded.value)
  const issues = loaded.cause._tag === "Fail" ? loaded.cause.error.issues : [{ variable: "configuration", rule: "could not be loaded" }]
  process.stderr.write(formatConfigIssues(issues) + "\n")
  process.exitCode = 1
  return Option.none()
}

const runOptions = { disableErrorReporting: true, disablePrettyLogger: true }

// Stopped by a signal, the primary exits 0 unless a worker did not stop cleanly (runWorkers sets process.exitCode).
const primaryTeardown: Teardown = (exit, onExit) =>
  defaultTeardown(exit, (code) => onExit(code !== 0 ? code : Number(process.exitCode ?? 0)))

const main = async (argv: ReadonlyArray<string>): Promise<void> => {
  const command = argv[0] ?? "serve"
  if (command === "--help" || command === "-h" || command === "help") {
    process.stdout.write(USAGE)
    return
  }
  if (command !== "serve" && command !== "multi" && command !== "migrate" && command !== "keys" && command !== "iam") {
    process.stderr.write(`Unknown command: ${command}\n\n${USAGE}`)
    process.exitCode = 2
    return
  }
  if (command === "iam" && argv[1] === "generate-key") {
    process.stdout.write(generateKeyText())
    return
  }
  const sources = { env: process.env, envFile: ".env" }
  if (command === "migrate") {
    const settings = await loadOrReport(loadDatabaseSettings(sources))
    if (Option.isSome(settings)) NodeRuntime.runMain(migrateOnly(settings.value), runOptions)
    return
  }
  const configured = await loadOrReport(loadConfig(sources, OAUTH_PROVIDER_SPECS))
  if (Option.isNone(configured)) return
  if (command === "multi" && Option.isNone(configured.value.config.operatorToken)) {
    process.stderr.write("Invalid configuration:\n  AUTH_OPERATOR_TOKEN: is required in multi-instance mode (the multi command)\n")
    process.exitCode = 1
    return
  }
  const loaded: LoadedConfig = command === "multi"
    ? { ...configured.value, config: { ...configured.value.config, multiInstance: true } }
    : configured.value
  const { config } = loaded
  if (command === "keys") {
    process.exitCode = await printKeys(config)
    return
  }
  if (command === "iam") {
    const code = await runIamCommand(argv.slice(1), config, {
      database: databaseFor(config, { wait: "2 minutes", holder: "command" }),
      migrations: migrations(config),
      logging: LoggingLive(config.log)
    })
    // As NodeRuntime.runMain does for the other commands, a failure ends the process: a database connection
    // still opening when the command gave up (IAM's LISTEN) must not keep it alive.
    if (code !== 0) process.exit(code)
    return
  }
  if (Option.isSome(workerId)) {
    NodeRuntime.runMain(serveWorker(loaded, workerId.value), runOptions)
    ignoreRepeatedSignals()
  } else if (config.workers > 1) {
    NodeRuntime.runMain(servePrimary(loaded), { ...runOptions, teardown: primaryTeardown })
  } else {
    NodeRuntime.runMain(serve(loaded), runOptions)
  }
}

void main(process.argv.slice(2))
