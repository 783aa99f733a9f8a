import { availableParallelism } from "node:os"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { AuthConfig, authConfigOf } from "./AuthConfig.js"
import { type AuthReadOptions, readAuthConfig } from "./AuthConfigReader.js"
import { IamConfig, readIamConfig } from "./IamConfig.js"
import { PlatformConfig, platformConfigOf, readMode, readPlatformConfig } from "./PlatformConfig.js"
import { ReadContext } from "./ReadContext.js"
import { type ConfigIssue, SettingsReader } from "./SettingsReader.js"

/**
 * Every setting, as one value: what the composition holds (the banner, `keys`, the cluster, tests). Services never
 * see it whole: configLayer gives each product its own part under its own tag.
 */
export type AppConfig = PlatformConfig & AuthConfig & { readonly iam: IamConfig }

/** The tags configLayer provides: what a layer built over the whole configuration may ask for. */
export type ConfigTags = PlatformConfig | AuthConfig | IamConfig

/**
 * The three tags, each holding only its own part of `config`: the platform's settings, auth's and IAM's. A service
 * asks for its product's tag, and for PlatformConfig where it needs the database, the mode or the server's URL.
 */
export const configLayer = (config: AppConfig): Layer.Layer<ConfigTags> =>
  Layer.mergeAll(
    Layer.succeed(PlatformConfig, platformConfigOf(config)),
    Layer.succeed(AuthConfig, authConfigOf(config)),
    Layer.succeed(IamConfig, config.iam)
  )

/** What start-up filled in because the operator left it unset: shown in the banner, never secret values. */
export type Defaulted = ReadonlyArray<string>

/**
 * Settings that start but will fail later, as GoTrue's do (phone sign-in with no SMS provider, a provider with
 * empty credentials): logged once at start-up, never secret values.
 */
export type ConfigWarnings = ReadonlyArray<string>

/** What parseAppConfig returns on success. */
export interface ParsedConfig {
  readonly config: AppConfig
  readonly defaulted: Defaulted
  readonly warnings: ConfigWarnings
}

export interface ParseOptions extends AuthReadOptions {
  /** The default of AUTH_WORKERS in production; os.availableParallelism() unless given (the server gives its container's CPUs). */
  readonly cores?: number
}

/**
 * Parses the whole configuration: the platform's settings, then auth's, then IAM's, all through one SettingsReader,
 * so one Left lists every broken variable of all three. Production (a DATABASE_URL is set) enforces every setting
 * the spec marks required; the embedded default fills development values instead and reports each one in `defaulted`.
 */
export const parseAppConfig = (
  env: Readonly<Record<string, string | undefined>>,
  options: ParseOptions = {}
): Either.Either<ParsedConfig, ReadonlyArray<ConfigIssue>> => {
  const r = new SettingsReader(env)
  const ctx = new ReadContext(r, readMode(env) === "postgres")
  const platform = readPlatformConfig(r, ctx, options.cores ?? availableParallelism())
  const auth = readAuthConfig(r, ctx, platform, options)
  const iam = readIamConfig(r, ctx)
  const config: AppConfig = { ...platform, ...auth, iam }
  const unread = r.unread()
  // A deployment switching from GoTrue brings its settings; one Gatehouse has no such setting for is said, not dropped.
  if (unread.length > 0) ctx.warnings.push(`set but not read (no such setting in Gatehouse): ${unread.join(", ")}`)
  // Settings are read as AUTH_<NAME> or GOTRUE_<NAME>: one set bare would otherwise do nothing, silently.
  const bare = r.unprefixed()
  if (bare.length > 0) {
    ctx.warnings.push(`set without a prefix, so not read: ${bare.join(", ")} (write ${bare.map((name) => `AUTH_${name}`).join(", ")})`)
  }
  return r.issues.length > 0 ? Either.left(r.issues) : Either.right({ config, defaulted: ctx.defaulted, warnings: ctx.warnings })
}

/** One message listing every broken variable, as printed before exit code 1. */
export const formatConfigIssues = (issues: ReadonlyArray<ConfigIssue>): string =>
  [`Invalid configuration (${issues.length} problem${issues.length === 1 ? "" : "s"}):`,
    ...issues.map((issue) => `  - ${issue.variable} ${issue.rule}`)].join("\n")
