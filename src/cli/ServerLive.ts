import { createServer, type Server } from "node:http"
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { ConsoleHttp, documentConsole } from "../auth/admin/console/ConsoleHttp.js"
import { ConsoleIam } from "../auth/admin/console/ConsoleIam.js"
import { AuthHttp, AuthHttpLive } from "../auth/AuthHttp.js"
import { documentLandingPage, LandingHttp, LandingHttpLive, landingPageServed } from "../auth/landing/LandingHttp.js"
import { OutboxLive } from "../auth/messages/OutboxLive.js"
import { OutboxRepo } from "../auth/messages/OutboxRepo.js"
import { UsersRepo } from "../auth/users/UsersRepo.js"
import { type AppConfig, configLayer } from "../config/AppConfig.js"
import type { AuthConfig } from "../config/AuthConfig.js"
import type { PlatformConfig } from "../config/PlatformConfig.js"
import { gotrueCorsPolicy } from "../platform/http/Cors.js"
import { holdEarlyRequests } from "../platform/http/EarlyRequests.js"
import { HttpEdgeLive } from "../platform/http/HttpEdge.js"
import { lazyModule } from "../platform/LazyModule.js"
import { documentOutbox, OutboxHttp, OutboxHttpLive } from "../platform/http/OutboxHttp.js"
import type { Database } from "../platform/sql/Database.js"
import { NoOutbox, type Outbox } from "../platform/mail/Outbox.js"
import { outboxEnabled, PortsLive } from "../platform/PortsLive.js"
import { TelemetryLive } from "../platform/Telemetry.js"
import { databaseFor, migrations } from "./StartupWork.js"

/*
 * The server's composition, in one place: which database, the migrations, the routes of both products on the shared
 * edge, and the layers of one serving process and of a cluster's primary. The commands in cli/ only run them.
 */
export const edgeSettings = (config: AppConfig, node: Server | undefined) => ({
  node,
  cors: gotrueCorsPolicy(config.api.corsAllowedHeaders, config.api.corsAllowedOrigins),
  requestIdHeader: config.api.requestIdHeader,
  // GoTrue's multi-instance mode (`gatehouse multi`): every request but the health check signed by the operator.
  operatorToken: config.multiInstance ? config.operatorToken : Option.none(),
  telemetry: { tracing: config.observability.tracingEnabled, metrics: config.observability.metricsEnabled }
})

/**
 * The pages beside the APIs: the landing page when the site URL is this server, the outbox in the embedded default,
 * the admin console when it is turned on.
 */
export const pages = (config: AppConfig) => [
  ...(landingPageServed(config) ? [LandingHttp] : []),
  ...(outboxEnabled(config) ? [OutboxHttp] : []),
  ...(config.adminConsole.enabled ? [ConsoleHttp] : [])
]

/** The pages this configuration serves, added to the OpenAPI document: what is not served is not described. */
export const documentPages = (config: AppConfig) => (spec: Record<string, any>): Record<string, any> =>
  [
    ...(landingPageServed(config) ? [documentLandingPage] : []),
    ...(outboxEnabled(config) ? [documentOutbox] : []),
    ...(config.adminConsole.enabled ? [documentConsole] : [])
  ].reduce((document, add) => add(document), spec)

// The console's code (its pages, its service) is loaded only by a server that serves it.
const loadConsole = lazyModule("the admin console", () => import("../auth/admin/console/ConsoleLive.js"))

/**
 * The pages' layers. `consoleIam`: the IAM roles the console lists, where the IAM service is served in this process
 * (cli/AuthAndIamLive.ts); none otherwise.
 */
export const PagesLive = <R = never>(config: AppConfig, consoleIam: Layer.Layer<ConsoleIam, never, R> = ConsoleIam.none as Layer.Layer<ConsoleIam, never, R>) =>
  Layer.mergeAll(
    LandingHttpLive({ outbox: outboxEnabled(config) }),
    OutboxHttpLive,
    config.adminConsole.enabled
      ? Layer.unwrapEffect(Effect.map(loadConsole, ({ ConsoleLive }) => ConsoleLive)).pipe(Layer.provide(consoleIam))
      // Off, no product asks for ConsoleHttp (pages() leaves it out), so nothing needs the layer that is not built.
      : (Layer.empty as Layer.Layer<ConsoleHttp>)
  )

/**
 * The Outbox for the Mailer, the SmsSender and the outbox page: the auth database's outbox table where the embedded
 * default keeps what it does not deliver, none where everything goes out.
 */
export const outboxFor = (config: AppConfig): Layer.Layer<Outbox, never, Database | PlatformConfig | AuthConfig> =>
  outboxEnabled(config) ? OutboxLive.pipe(Layer.provide(Layer.merge(OutboxRepo.Default, UsersRepo.Default))) : NoOutbox

/**
 * The auth product alone on the shared edge (IAM disabled), after the pages. `node`: the Node server they are served
 * on, for the hot lane (platform/http/HotLane.ts); without it every request takes the platform's router.
 */
export const AuthRoutesLive = (config: AppConfig, node?: Server) =>
  HttpEdgeLive(edgeSettings(config, node), [...pages(config), AuthHttp]).pipe(
    Layer.provide(AuthHttpLive({ documentOthers: documentPages(config) })),
    Layer.provide(PagesLive(config))
  )

/**
 * The routes served by Node on API_HOST:PORT, and the HttpServer itself (its address: PORT may be 0). A cluster worker
 * does not log the address: the primary does, once, when every worker serves.
 */
export const HttpServerLive = <E, R>(config: AppConfig, routes: (node: Server) => Layer.Layer<never, E, R>, options = { logAddress: true }) =>
  Layer.unwrapEffect(Effect.sync(() => {
    const node = holdEarlyRequests(createServer())
    return routes(node).pipe(
      (served) => (options.logAddress ? HttpServer.withLogAddress(served) : served),
      Layer.provideMerge(NodeHttpServer.layer(() => node, { host: config.api.host, port: config.api.port }))
    )
  }))

const loadAuthAndIam = lazyModule("the IAM service", () => import("./AuthAndIamLive.js"))

/**
 * The ports one serving process listens on, over the database. A single process also does the start-up work that
 * must run once per start, not once per process (the migrations and the configured IAM admin) and logs the address;
 * in a cluster the primary does both (PrimaryStartLive) and the workers only serve.
 */
export const ServerLive = (config: AppConfig, role: "single" | "worker") => {
  const single = role === "single"
  const Migrated = single ? Layer.effectDiscard(migrations(config)) : Layer.empty
  // The IAM service shares the HTTP port (its /auth/... routes) and adds its gRPC port. Its code (the gRPC and
  // Connect stack, protobuf, PASETO, its routes) is loaded only when it is served: most of a process's memory else.
  const Products = config.iam.enabled
    ? Layer.unwrapEffect(Effect.map(loadAuthAndIam, ({ AuthAndIamServerLive }) => AuthAndIamServerLive(config, role)))
    : HttpServerLive(config, (node) => AuthRoutesLive(config, node), { logAddress: single })
  return Products.pipe(
    Layer.provide(TelemetryLive(config, { role: single ? "single" : "worker" })),
    Layer.provide(PortsLive(config)),
    Layer.provide(outboxFor(config)),
    Layer.provide(Migrated),
    Layer.provide(configLayer(config)),
    Layer.provide(databaseFor(config, { wait: "5 seconds", holder: "server" }))
  )
}
