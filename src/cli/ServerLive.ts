import { createServer } from "node:http"
import { HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { type Duration, Effect, Layer, Option } from "effect"
import { AuthHttp, AuthHttpLive } from "../auth/AuthHttp.js"
import { describeAdoptedRows, describeGoTrueSchema, recognizeGoTrue } from "../auth/domain/GoTrueRelease.js"
import { documentLandingPage, LandingHttp, LandingHttpLive, landingPageServed } from "../auth/landing/LandingHttp.js"
import { OutboxLive } from "../auth/messages/OutboxLive.js"
import { OutboxRepo } from "../auth/messages/OutboxRepo.js"
import { GoTrueAdoptionRepo } from "../auth/users/GoTrueAdoptionRepo.js"
import { TrigramIndexesRepo } from "../auth/users/TrigramIndexesRepo.js"
import { UsersRepo } from "../auth/users/UsersRepo.js"
import { type AppConfig, configLayer } from "../config/AppConfig.js"
import type { AuthConfig } from "../config/AuthConfig.js"
import type { DatabaseSettings, PlatformConfig } from "../config/PlatformConfig.js"
import { IamGrpcServerLive } from "../iam/grpc/GrpcServer.js"
import { IamHttp, IamHttpLive } from "../iam/IamHttp.js"
import { IamConfiguredAdminLive, IamServicesLive } from "../iam/IamLive.js"
import { IamBackgroundLive } from "../iam/IamServer.js"
import { documentIamRoutes } from "../iam/rest/IamRestDocs.js"
import { gotrueCorsPolicy } from "../platform/http/Cors.js"
import { holdEarlyRequests } from "../platform/http/EarlyRequests.js"
import { HttpEdgeLive } from "../platform/http/HttpEdge.js"
import { documentOutbox, OutboxHttp, OutboxHttpLive } from "../platform/http/OutboxHttp.js"
import { BcryptPasswordHasher } from "../platform/PasswordHasher.js"
import type { LockHolder } from "../platform/process/DataDirLock.js"
import { type Database, type DatabaseUnavailable, EmbeddedDatabase, PostgresDatabase } from "../platform/sql/Database.js"
import { migrate } from "../platform/sql/Migrator.js"
import { NoOutbox, type Outbox } from "../platform/mail/Outbox.js"
import { outboxEnabled, PortsLive } from "../platform/PortsLive.js"
import { SecureRandom } from "../platform/SecureRandom.js"
import { TelemetryLive } from "../platform/Telemetry.js"

/*
 * The server's composition, in one place: which database, the migrations, the routes of both products on the shared
 * edge, and the layers of one serving process and of a cluster's primary. The commands in cli/ only run them.
 */
const edgeSettings = (config: AppConfig) => ({
  cors: gotrueCorsPolicy(config.api.corsAllowedHeaders, config.api.corsAllowedOrigins),
  requestIdHeader: config.api.requestIdHeader,
  // GoTrue's multi-instance mode (`gatehouse multi`): every request but the health check signed by the operator.
  operatorToken: config.multiInstance ? config.operatorToken : Option.none(),
  telemetry: { tracing: config.observability.tracingEnabled, metrics: config.observability.metricsEnabled }
})

/** The pages beside the APIs: the landing page when the site URL is this server, the outbox in the embedded default. */
const pages = (config: AppConfig) => [
  ...(landingPageServed(config) ? [LandingHttp] : []),
  ...(outboxEnabled(config) ? [OutboxHttp] : [])
]

/** The pages this configuration serves, added to the OpenAPI document: what is not served is not described. */
const documentPages = (config: AppConfig) => (spec: Record<string, any>): Record<string, any> =>
  [...(landingPageServed(config) ? [documentLandingPage] : []), ...(outboxEnabled(config) ? [documentOutbox] : [])]
    .reduce((document, add) => add(document), spec)

const PagesLive = (config: AppConfig) => Layer.merge(LandingHttpLive({ outbox: outboxEnabled(config) }), OutboxHttpLive)

/**
 * The Outbox for the Mailer, the SmsSender and the outbox page: the auth database's outbox table where the embedded
 * default keeps what it does not deliver, none where everything goes out.
 */
export const outboxFor = (config: AppConfig): Layer.Layer<Outbox, never, Database | PlatformConfig | AuthConfig> =>
  outboxEnabled(config) ? OutboxLive.pipe(Layer.provide(Layer.merge(OutboxRepo.Default, UsersRepo.Default))) : NoOutbox

/** The auth product alone on the shared edge (IAM disabled), after the pages. */
export const AuthRoutesLive = (config: AppConfig) =>
  HttpEdgeLive(edgeSettings(config), [...pages(config), AuthHttp]).pipe(
    Layer.provide(AuthHttpLive({ documentOthers: documentPages(config) })),
    Layer.provide(PagesLive(config))
  )

/**
 * Both products on one port: the IAM service owns its REST and RPC paths under /auth/, the auth API every other
 * path (and `/auth/v1/`); /openapi.json and /docs describe both. The pages come first; each owns only its own path.
 */
export const AuthAndIamRoutesLive = (config: AppConfig) =>
  HttpEdgeLive(edgeSettings(config), [...pages(config), IamHttp, AuthHttp]).pipe(
    Layer.provide(IamHttpLive),
    Layer.provide(AuthHttpLive({ documentOthers: (spec) => documentPages(config)(documentIamRoutes(spec)) })),
    Layer.provide(PagesLive(config))
  )

/**
 * The routes served by Node on API_HOST:PORT, and the HttpServer itself (its address: PORT may be 0). A cluster worker
 * does not log the address: the primary does, once, when every worker serves.
 */
export const HttpServerLive = <E, R>(config: AppConfig, routes: Layer.Layer<never, E, R>, options = { logAddress: true }) =>
  routes.pipe(
    (served) => (options.logAddress ? HttpServer.withLogAddress(served) : served),
    Layer.provideMerge(NodeHttpServer.layer(() => holdEarlyRequests(createServer()), { host: config.api.host, port: config.api.port }))
  )

// A second `migrate` waits for the first to release the embedded database instead of failing; an embedded
// database held by a running server is refused at once (see lockDataDir).
export const databaseFor = (
  config: DatabaseSettings,
  lock: { readonly wait: Duration.DurationInput; readonly holder: LockHolder }
): Layer.Layer<Database, DatabaseUnavailable> =>
  Option.match(config.db.url, {
    onNone: () => EmbeddedDatabase({ dataDir: Option.some(config.dataDir), lockWait: lock.wait, lockHolder: lock.holder }),
    onSome: (url) => PostgresDatabase({ url, maxPoolSize: config.db.maxPoolSize })
  })

/** Applies the pending migrations of both products and logs which. */
export const migrations = (config: DatabaseSettings) =>
  Effect.gen(function*() {
    // A GoTrue database (switching from Supabase Auth in place): which release made it, before anything changes.
    const record = yield* GoTrueAdoptionRepo.migrationRecord(config.db.namespace)
    if (record !== undefined) {
      const { text, warning } = describeGoTrueSchema(recognizeGoTrue(record))
      yield* warning ? Effect.logWarning(`GoTrue's schema: ${text}`) : Effect.logInfo(`GoTrue's schema: made by ${text}`)
    }
    const applied = yield* migrate({ namespace: config.db.namespace })
    yield* Effect.logInfo(applied.length === 0 ? "migrations: up to date" : `migrations: applied ${applied.length}`).pipe(
      Effect.annotateLogs("migrations", applied.map((m) => `${m.product}/${String(m.version).padStart(4, "0")}_${m.name}`))
    )
    if (record !== undefined) yield* logAdoptedRows
    const untrigrammed = yield* TrigramIndexesRepo.missing(config.db.namespace)
    if (untrigrammed.length > 0) {
      yield* Effect.logWarning("pg_trgm is not available (or was not when the migrations ran): the admin list's filter and the " +
        "audit log's author filter scan their tables, which costs seconds at a million rows. CREATE EXTENSION pg_trgm, " +
        "then create the indexes of migrations/auth/0024 by hand").pipe(Effect.annotateLogs("missing_indexes", untrigrammed))
    }
  })

/** What an adopted GoTrue database holds, logged after the migrations: a report, never a reason to stop. */
const logAdoptedRows = GoTrueAdoptionRepo.adoptedRows.pipe(
  Effect.flatMap((rows) => Effect.logInfo(describeAdoptedRows(rows)).pipe(Effect.annotateLogs("adopted", rows))),
  Effect.catchAll(() => Effect.logWarning("could not count GoTrue's rows (an older schema?): the migrations are applied all the same"))
)

/**
 * The ports one serving process listens on, over the database. A single process also does the start-up work that
 * must run once per start, not once per process (the migrations and the configured IAM admin) and logs the address;
 * in a cluster the primary does both (PrimaryStartLive) and the workers only serve.
 */
export const ServerLive = (config: AppConfig, role: "single" | "worker") => {
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
    Layer.provide(databaseFor(config, { wait: "5 seconds", holder: "server" }))
  )
}

/**
 * A cluster primary's once-only start-up work: the migrations, then the configured IAM admin, made here once because
 * workers making it together would race for its username.
 */
export const PrimaryStartLive = (config: AppConfig) => {
  const { email, password, username } = config.iam.bootstrapAdmin
  const adminConfigured = config.iam.enabled && Option.isSome(email) && Option.isSome(password) && Option.isSome(username)
  return (adminConfigured
    ? IamConfiguredAdminLive.pipe(Layer.provide(IamServicesLive), Layer.provide(Layer.merge(BcryptPasswordHasher(), SecureRandom.Live)))
    : Layer.empty).pipe(
      Layer.provide(Layer.effectDiscard(migrations(config))),
      Layer.provide(configLayer(config)),
      Layer.provide(databaseFor(config, { wait: "5 seconds", holder: "server" }))
    )
}
