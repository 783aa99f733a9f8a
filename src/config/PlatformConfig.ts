import * as Context from "effect/Context"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { corsOriginProblem } from "../domain/CorsOrigins.js"
import { defaultPoolSize } from "./DefaultPoolSize.js"
import { parseKeyValueList } from "./KeyValueList.js"
import type { ReadContext } from "./ReadContext.js"
import { type ConfigIssue, isAbsoluteUrl, SettingsReader } from "./SettingsReader.js"

/** OTEL_EXPORTER_OTLP_PROTOCOL's values. */
export type OtlpProtocol = "grpc" | "http/protobuf" | "http/json"

export type LogLevelName = "panic" | "fatal" | "error" | "warn" | "info" | "debug" | "trace"
export type DatabaseMode = "postgres" | "embedded"

/** The settings both products stand on: where they listen, the database, the processes, logs and telemetry. */
export interface PlatformConfig {
  readonly mode: DatabaseMode
  readonly dataDir: string
  /** Processes serving the ports (AUTH_WORKERS): one per core in production by default; always 1 embedded. */
  readonly workers: number
  readonly operatorToken: Option.Option<Redacted.Redacted<string>>
  /**
   * GoTrue's multi-instance mode, entered with the `multi` command (not a variable, as in GoTrue): requests must
   * be signed by the operator with OPERATOR_TOKEN, which the mode requires.
   */
  readonly multiInstance: boolean
  readonly api: {
    readonly host: string
    readonly port: number
    readonly endpoint: Option.Option<string>
    readonly externalUrl: string
    readonly requestIdHeader: Option.Option<string>
    /**
     * RATE_LIMIT_HEADER: the header a proxy in front names the client in (X-Real-IP, X-Forwarded-For). One setting
     * for both products: auth keys its per-client rate limits and audit addresses on it, IAM its login throttle and
     * logs. Without it auth's per-client limits are off, as in GoTrue.
     */
    readonly clientHeader: Option.Option<string>
    readonly corsAllowedHeaders: ReadonlyArray<string>
    /** Gatehouse's own: the origins CORS answers (with credentials); empty, every origin, as in GoTrue. */
    readonly corsAllowedOrigins: ReadonlyArray<string>
  }
  readonly db: {
    readonly driver: "postgres"
    readonly url: Option.Option<Redacted.Redacted<string>>
    /** Each worker's pool; 0 means no limit, as in GoTrue (only when set so: the default is finite). */
    readonly maxPoolSize: number
    readonly namespace: string
  }
  readonly log: {
    readonly level: LogLevelName
    readonly file: Option.Option<string>
  }
  readonly observability: {
    readonly tracingEnabled: boolean
    readonly tracingExporter: "opentelemetry"
    readonly metricsEnabled: boolean
    readonly metricsExporter: "opentelemetry" | "prometheus"
    readonly prometheusHost: string
    readonly prometheusPort: number
    readonly debug: boolean
    /** OTEL_RESOURCE_ATTRIBUTES, parsed. */
    readonly resourceAttributes: Readonly<Record<string, string>>
    /** OTEL_SERVICE_NAME; default gatehouse. */
    readonly serviceName: string
    readonly otlp: {
      /** OTEL_EXPORTER_OTLP_PROTOCOL: how traces and pushed metrics travel; default http/protobuf, as the SDK's. */
      readonly protocol: OtlpProtocol
      /** Where traces go: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces. */
      readonly tracesEndpoint: Option.Option<string>
      /** The same for pushed metrics (/v1/metrics). */
      readonly metricsEndpoint: Option.Option<string>
      /** OTEL_EXPORTER_OTLP_HEADERS, parsed: sent with every export (a collector's API key, say). */
      readonly headers: Readonly<Record<string, Redacted.Redacted<string>>>
    }
  }
}

export const PlatformConfig = Context.GenericTag<PlatformConfig>("config/PlatformConfig")

/**
 * The platform's settings out of a whole configuration, and nothing else: what the PlatformConfig tag holds, so no
 * service reaches a product's settings through it. Listing every field makes a new one a compile error here.
 */
export const platformConfigOf = (config: PlatformConfig): PlatformConfig => ({
  mode: config.mode,
  dataDir: config.dataDir,
  workers: config.workers,
  operatorToken: config.operatorToken,
  multiInstance: config.multiInstance,
  api: config.api,
  db: config.db,
  log: config.log,
  observability: config.observability
})

export const DEFAULT_PORT = 8081
export const DEFAULT_DATA_DIR = "./.gatehouse"

const NAMESPACE = /^[a-z_][a-z0-9_]{0,40}$/
const LOG_LEVELS: ReadonlyArray<LogLevelName | "warning"> = ["panic", "fatal", "error", "warn", "warning", "info", "debug", "trace"]
const MAX_WORKERS = 1024

/** The data directory, read before anything else because the embedded JWT secret lives there. */
export const readDataDir = (env: Readonly<Record<string, string | undefined>>): string =>
  Option.getOrElse(new SettingsReader(env).string("DATA_DIR"), () => DEFAULT_DATA_DIR)

/** Production when a database URL is configured; otherwise the embedded PGlite default. */
export const readMode = (env: Readonly<Record<string, string | undefined>>): DatabaseMode =>
  Option.isSome(new SettingsReader(env).lookup("DB_DATABASE_URL", { unprefixed: ["DATABASE_URL"] })) ? "postgres" : "embedded"

/** The embedded default's address of this server: SITE_URL's and API_EXTERNAL_URL's default. */
export const developmentUrl = (port: number): string => `http://localhost:${port === 0 ? DEFAULT_PORT : port}`

/**
 * Reads the platform's settings through `r`, which collects their issues with the products'. `cores` is the default
 * of AUTH_WORKERS in production.
 */
export const readPlatformConfig = (r: SettingsReader, ctx: ReadContext, cores: number): PlatformConfig => {
  const production = ctx.production
  const port = r.integer("API_PORT", DEFAULT_PORT, { min: 0, max: 65535 }, { unprefixed: ["PORT"] })
  const externalUrl = ctx.devDefault("API_EXTERNAL_URL", developmentUrl(port), { unprefixed: ["API_EXTERNAL_URL"] })
  if (externalUrl !== "" && !isAbsoluteUrl(externalUrl)) {
    r.fail(r.spelledAs("API_EXTERNAL_URL", { unprefixed: ["API_EXTERNAL_URL"] }), "must be an absolute http(s) URL")
  }
  const corsAllowedOrigins = r.list("CORS_ALLOWED_ORIGINS", [])
  for (const entry of corsAllowedOrigins) {
    const problem = corsOriginProblem(entry)
    if (problem !== undefined) r.fail(r.spelledAs("CORS_ALLOWED_ORIGINS"), `entry ${JSON.stringify(entry)} ${problem}`)
  }
  const workers = readWorkers(r, ctx, cores)
  const storage = readStorage(r, production, workers)
  return {
    mode: production ? "postgres" : "embedded",
    dataDir: Option.getOrElse(r.string("DATA_DIR"), () => DEFAULT_DATA_DIR),
    workers,
    operatorToken: r.secret("OPERATOR_TOKEN"),
    multiInstance: false,
    api: {
      // The embedded default is a development server with a generated secret: keep it on loopback. Unprefixed too,
      // beside PORT: the spec's table names the API settings without a prefix.
      host: Option.getOrElse(r.string("API_HOST", { unprefixed: ["API_HOST"] }), () => (production ? "0.0.0.0" : "127.0.0.1")),
      port,
      endpoint: r.url("API_ENDPOINT"),
      externalUrl,
      requestIdHeader: r.string("REQUEST_ID_HEADER"),
      clientHeader: r.string("RATE_LIMIT_HEADER"),
      corsAllowedHeaders: r.list("CORS_ALLOWED_HEADERS", []),
      corsAllowedOrigins
    },
    db: storage.db,
    log: storage.log,
    observability: {
      tracingEnabled: r.boolean("TRACING_ENABLED", false),
      tracingExporter: r.oneOf("TRACING_EXPORTER", ["opentelemetry"], "opentelemetry"),
      metricsEnabled: r.boolean("METRICS_ENABLED", false),
      metricsExporter: r.oneOf("METRICS_EXPORTER", ["opentelemetry", "prometheus"], "opentelemetry"),
      prometheusHost: Option.getOrElse(
        r.string("OTEL_EXPORTER_PROMETHEUS_HOST", { unprefixed: ["OTEL_EXPORTER_PROMETHEUS_HOST"] }), () => "0.0.0.0"),
      prometheusPort: r.integer("OTEL_EXPORTER_PROMETHEUS_PORT", 9100, { min: 1, max: 65535 },
        { unprefixed: ["OTEL_EXPORTER_PROMETHEUS_PORT"] }),
      debug: r.boolean("DEBUG", false),
      resourceAttributes: r.parse("OTEL_RESOURCE_ATTRIBUTES", { unprefixed: ["OTEL_RESOURCE_ATTRIBUTES"] }, {},
        "must be key=value pairs separated by commas (values percent-encoded)", parseKeyValueList),
      serviceName: Option.getOrElse(r.string("OTEL_SERVICE_NAME", { unprefixed: ["OTEL_SERVICE_NAME"] }), () => "gatehouse"),
      otlp: readOtlp(r)
    }
  }
}

/**
 * The standard OTLP exporter variables, read without a prefix like every OpenTelemetry SDK (and with AUTH_, like
 * every other setting). A signal's own endpoint is used as given; the shared one gets the signal's path, as the
 * OTLP specification says. No endpoint leaves the exporter's default (a collector on localhost).
 */
const readOtlp = (r: SettingsReader): PlatformConfig["observability"]["otlp"] => {
  const shared = r.url("OTEL_EXPORTER_OTLP_ENDPOINT", { unprefixed: ["OTEL_EXPORTER_OTLP_ENDPOINT"] })
  const protocol = r.oneOf("OTEL_EXPORTER_OTLP_PROTOCOL", ["grpc", "http/protobuf", "http/json"], "http/protobuf",
    { unprefixed: ["OTEL_EXPORTER_OTLP_PROTOCOL"] })
  // gRPC has no per-signal path: the endpoint is the collector's address.
  const withPath = (signal: "traces" | "metrics") =>
    Option.map(shared, (base) => (protocol === "grpc" ? base : `${base.replace(/\/+$/, "")}/v1/${signal}`))
  const headers = r.parse("OTEL_EXPORTER_OTLP_HEADERS", { unprefixed: ["OTEL_EXPORTER_OTLP_HEADERS"] }, {},
    "must be key=value pairs separated by commas (values percent-encoded)", parseKeyValueList)
  return {
    protocol,
    tracesEndpoint: Option.orElse(
      r.url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", { unprefixed: ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] }),
      () => withPath("traces")
    ),
    metricsEndpoint: Option.orElse(
      r.url("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", { unprefixed: ["OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"] }),
      () => withPath("metrics")
    ),
    headers: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, Redacted.make(value)]))
  }
}

/**
 * AUTH_WORKERS: how many processes serve the ports. The embedded database lives in one process, so there a
 * larger value is read (and checked) but only warned about: a production .env tried without DATABASE_URL still
 * starts.
 */
const readWorkers = (r: SettingsReader, ctx: ReadContext, cores: number): number => {
  const workers = r.integer("WORKERS", ctx.production ? Math.min(Math.max(cores, 1), MAX_WORKERS) : 1, { min: 1, max: MAX_WORKERS })
  if (ctx.production) return workers
  if (workers > 1) {
    ctx.warnings.push(`${r.spelledAs("WORKERS")}=${workers} is ignored: the embedded database serves from one process (set DATABASE_URL to use several)`)
  }
  return 1
}

/** What `migrate` needs: where the database is and how to log, none of the settings only the server uses. */
export interface DatabaseSettings {
  readonly mode: DatabaseMode
  readonly dataDir: string
  readonly db: PlatformConfig["db"]
  readonly log: PlatformConfig["log"]
}

/**
 * Reads only the database and logging settings, by the same rules as the server's configuration, so an operator can
 * run `migrate` from a deploy job that does not hold the SMTP, JWT or URL settings.
 */
export const parseDatabaseSettings = (
  env: Readonly<Record<string, string | undefined>>
): Either.Either<DatabaseSettings, ReadonlyArray<ConfigIssue>> => {
  const r = new SettingsReader(env)
  // DB_DRIVER stays optional here: a migration run has only the one driver to use, and it is one process.
  const settings: DatabaseSettings = { mode: readMode(env), dataDir: readDataDir(env), ...readStorage(r, false, 1) }
  return r.issues.length > 0 ? Either.left(r.issues) : Either.right(settings)
}

const normalizeLogLevel = (level: LogLevelName | "warning"): LogLevelName => (level === "warning" ? "warn" : level)

/**
 * The database and logging settings, read the same way for the server and for `migrate`; the pool's default depends
 * on how many processes each hold one.
 */
/**
 * GoTrue reads DB_NAMESPACE as the name of its schema: `auth`, its default and the value in Supabase's own deployment
 * settings. Gatehouse reads it as a prefix of its table names in that schema. Taken as a prefix, a GoTrue deployment's
 * `DB_NAMESPACE=auth` would put Gatehouse's tables beside GoTrue's (`auth.auth_users`) and leave every user behind, so
 * that one value means what it means to GoTrue: the `auth` schema itself, no prefix.
 */
export const tablePrefixNamespace = (value: string): string => (value === "auth" ? "" : value)

const readStorage = (r: SettingsReader, driverRequired: boolean, workers: number): Pick<PlatformConfig, "db" | "log"> => {
  const urlNames = { unprefixed: ["DATABASE_URL"] }
  const url = r.lookup("DB_DATABASE_URL", urlNames)
  if (Option.isSome(url) && !/^postgres(ql)?:\/\//.test(url.value.value)) {
    r.fail(url.value.variable, "must be a postgres:// or postgresql:// connection string")
  }
  const driver = r.lookup("DB_DRIVER")
  if (driverRequired && Option.isNone(driver)) r.fail(r.canonical("DB_DRIVER"), "is required")
  if (Option.isSome(driver) && driver.value.value !== "postgres") r.fail(driver.value.variable, "must be postgres")
  const namespaceNames = { unprefixed: ["DB_NAMESPACE"] }
  const namespace = r.lookup("DB_NAMESPACE", namespaceNames)
  if (Option.isSome(namespace) && !NAMESPACE.test(namespace.value.value)) {
    r.fail(namespace.value.variable, "must be a lowercase SQL identifier (letters, digits, underscores; at most 41 characters)")
  }
  return {
    db: {
      driver: "postgres",
      url: r.secret("DB_DATABASE_URL", urlNames),
      // 0, set explicitly, is GoTrue's "no limit"; unset is a share of a budget (DefaultPoolSize).
      maxPoolSize: r.integer("DB_MAX_POOL_SIZE", defaultPoolSize(workers), { min: 0, max: 10_000 }),
      namespace: Option.match(namespace, { onNone: () => "", onSome: (found) => tablePrefixNamespace(found.value) })
    },
    log: {
      level: normalizeLogLevel(r.oneOf("LOG_LEVEL", LOG_LEVELS, "info", { unprefixed: ["LOG_LEVEL"] })),
      file: r.string("LOG_FILE", { unprefixed: ["LOG_FILE"] })
    }
  }
}
