import { randomBytes } from "node:crypto"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { parseEnv } from "node:util"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { type ParsedConfig, parseAppConfig } from "./AppConfig.js"
import type { OAuthProviderSpec } from "./AuthConfig.js"
import { type DatabaseSettings, parseDatabaseSettings, readDataDir, readMode } from "./PlatformConfig.js"
import type { ConfigIssue } from "./SettingsReader.js"

export class ConfigInvalid extends Data.TaggedError("ConfigInvalid")<{ readonly issues: ReadonlyArray<ConfigIssue> }> {}

export type LoadedConfig = ParsedConfig

export interface ConfigSources {
  readonly env: Readonly<Record<string, string | undefined>>
  /** Path of the dotenv file; a missing file is not an error. */
  readonly envFile: string
  /** The default of AUTH_WORKERS in production: the CPUs the process may use (the platform reads its container's quota). */
  readonly cores?: number
}

/** The environment over the `.env` file: a variable set in both takes the environment's value. */
export const mergeSources = (sources: ConfigSources): Effect.Effect<Record<string, string | undefined>, ConfigInvalid> =>
  Effect.try({
    try: () => {
      let text: string
      try {
        text = readFileSync(sources.envFile, "utf8")
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return { ...sources.env }
        throw error
      }
      const merged: Record<string, string | undefined> = parseEnv(text)
      // A key present with an undefined value is unset, so it must not hide the file's value.
      for (const [name, value] of Object.entries(sources.env)) if (value !== undefined) merged[name] = value
      return merged
    },
    catch: () => new ConfigInvalid({ issues: [{ variable: sources.envFile, rule: "could not be read" }] })
  })

const SECRET_FILE = "jwt-secret"

/**
 * The embedded default's JWT secret: generated once and kept in the data directory, so tokens survive a
 * restart without the developer having to invent a secret.
 */
export const embeddedJwtSecret = (dataDir: string): Effect.Effect<Redacted.Redacted<string>, ConfigInvalid> =>
  Effect.try({
    try: () => {
      const path = join(dataDir, SECRET_FILE)
      try {
        const existing = readFileSync(path, "utf8").trim()
        if (existing !== "") return Redacted.make(existing)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error
      }
      mkdirSync(dataDir, { recursive: true, mode: 0o700 })
      // The one draw of randomness outside platform/SecureRandom.ts: config sits below the platform and runs before
      // any layer exists.
      const secret = randomBytes(48).toString("base64url")
      writeFileSync(path, `${secret}\n`, { mode: 0o600, flag: "wx" })
      return Redacted.make(secret)
    },
    catch: () => new ConfigInvalid({ issues: [{ variable: "AUTH_DATA_DIR", rule: `must be a writable directory (${dataDir})` }] })
  })

/**
 * The whole configuration, every broken variable reported at once. `oauthProviders` are the identity providers
 * whose EXTERNAL_<NAME>_* variables are read: the auth registry's, handed in by the composition, since the config
 * sits below auth and names none itself.
 */
export const loadConfig = (
  sources: ConfigSources,
  oauthProviders: ReadonlyArray<OAuthProviderSpec>
): Effect.Effect<LoadedConfig, ConfigInvalid> =>
  Effect.gen(function*() {
    const env = yield* mergeSources(sources)
    const jwtSecretSet = ["AUTH_JWT_SECRET", "GOTRUE_JWT_SECRET"].some((name) => (env[name] ?? "").trim() !== "")
    const secret = readMode(env) === "embedded" && !jwtSecretSet
      ? Option.some(yield* embeddedJwtSecret(readDataDir(env)))
      : Option.none()
    const parsed = parseAppConfig(env, { oauthProviders, ...(sources.cores !== undefined ? { cores: sources.cores } : {}), ...(Option.isSome(secret) ? { embeddedJwtSecret: secret.value } : {}) })
    return yield* Either.match(parsed, {
      onLeft: (issues) => Effect.fail(new ConfigInvalid({ issues })),
      onRight: Effect.succeed
    })
  })

/** The database and logging settings alone, from the same sources: what `migrate` needs. */
export const loadDatabaseSettings = (sources: ConfigSources): Effect.Effect<DatabaseSettings, ConfigInvalid> =>
  Effect.flatMap(mergeSources(sources), (env) =>
    Either.match(parseDatabaseSettings(env), {
      onLeft: (issues) => Effect.fail(new ConfigInvalid({ issues })),
      onRight: Effect.succeed
    }))
