import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { ConfigInvalid, loadConfig, mergeSources } from "../../src/config/loadConfig.js"

let dir = ""

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "gatehouse-config-"))
})

afterEach(() => {
  rmSync(dir, { recursive: true, force: true })
})

const envFile = () => join(dir, ".env")
const dataDir = () => join(dir, "data")
const secretFile = () => join(dataDir(), "jwt-secret")
const writeEnvFile = (text: string) => writeFileSync(envFile(), text)
/** Most cases here are about the sources, not the identity providers, whose variables are then not read. */
const NO_PROVIDERS = [] as const

describe("mergeSources", () => {
  it.effect("reads the .env file", () =>
    Effect.gen(function*() {
      writeEnvFile([
        "# a comment",
        "AUTH_SITE_URL=http://from-file:3000",
        "AUTH_JWT_EXP=\"600\"",
        ""
      ].join("\n"))
      const merged = yield* mergeSources({ env: {}, envFile: envFile() })
      expect(merged.AUTH_SITE_URL).toBe("http://from-file:3000")
      expect(merged.AUTH_JWT_EXP).toBe("600")
    }))

  it.effect("lets the environment win over the file", () =>
    Effect.gen(function*() {
      writeEnvFile("AUTH_SITE_URL=http://from-file:3000\nAUTH_JWT_EXP=600\n")
      const merged = yield* mergeSources({ env: { AUTH_SITE_URL: "http://from-env:4000" }, envFile: envFile() })
      expect(merged.AUTH_SITE_URL).toBe("http://from-env:4000")
      expect(merged.AUTH_JWT_EXP).toBe("600")
    }))

  it.effect("does not let a key that is present but undefined hide the file's value", () =>
    Effect.gen(function*() {
      writeEnvFile("AUTH_JWT_EXP=600\n")
      const merged = yield* mergeSources({ env: { AUTH_JWT_EXP: undefined }, envFile: envFile() })
      expect(merged.AUTH_JWT_EXP).toBe("600")
    }))

  it.effect("is fine without a .env file", () =>
    Effect.gen(function*() {
      const merged = yield* mergeSources({ env: { AUTH_JWT_EXP: "60" }, envFile: join(dir, "missing.env") })
      expect(merged).toStrictEqual({ AUTH_JWT_EXP: "60" })
    }))

  it.effect("reports a .env that exists but cannot be read", () =>
    Effect.gen(function*() {
      mkdirSync(envFile())
      const error = yield* Effect.flip(mergeSources({ env: {}, envFile: envFile() }))
      expect(error).toBeInstanceOf(ConfigInvalid)
      expect(error.issues).toStrictEqual([{ variable: envFile(), rule: "could not be read" }])
    }))
})

describe("loadConfig", () => {
  it.effect("configures from the .env file, overridden by the environment", () =>
    Effect.gen(function*() {
      writeEnvFile([
        "AUTH_SITE_URL=http://from-file:3000",
        "AUTH_JWT_SECRET=secret-from-file",
        "AUTH_JWT_EXP=600",
        "LOG_LEVEL=debug"
      ].join("\n"))
      const { config } = yield* loadConfig({ env: { LOG_LEVEL: "error" }, envFile: envFile() }, NO_PROVIDERS)
      expect(config.siteUrl).toBe("http://from-file:3000")
      expect(Redacted.value(config.jwt.secret)).toBe("secret-from-file")
      expect(config.jwt.exp).toBe(600)
      expect(config.log.level).toBe("error")
    }))

  it.effect("starts with neither a .env file nor any variable beyond the data directory", () =>
    Effect.gen(function*() {
      const { config, defaulted } = yield* loadConfig({ env: { AUTH_DATA_DIR: dataDir() }, envFile: envFile() }, NO_PROVIDERS)
      expect(config.mode).toBe("embedded")
      expect(config.dataDir).toBe(dataDir())
      expect(defaulted.some((line) => line.startsWith("AUTH_JWT_SECRET="))).toBe(true)
    }))

  it.effect("generates the embedded JWT secret once, private to the owner, and reuses it", () =>
    Effect.gen(function*() {
      const sources = { env: { AUTH_DATA_DIR: dataDir() }, envFile: envFile() }
      const first = yield* loadConfig(sources, NO_PROVIDERS)
      const secret = Redacted.value(first.config.jwt.secret)
      expect(secret.length).toBeGreaterThanOrEqual(32)
      expect(readFileSync(secretFile(), "utf8").trim()).toBe(secret)
      expect(statSync(secretFile()).mode & 0o777).toBe(0o600)
      expect(statSync(dataDir()).mode & 0o077).toBe(0)
      expect(first.defaulted.join("\n")).not.toContain(secret)

      const second = yield* loadConfig(sources, NO_PROVIDERS)
      expect(Redacted.value(second.config.jwt.secret)).toBe(secret)
      expect(readFileSync(secretFile(), "utf8").trim()).toBe(secret)
    }))

  it.effect("takes the data directory from the .env file too", () =>
    Effect.gen(function*() {
      writeEnvFile(`AUTH_DATA_DIR=${dataDir()}\n`)
      const { config } = yield* loadConfig({ env: {}, envFile: envFile() }, NO_PROVIDERS)
      expect(readFileSync(secretFile(), "utf8").trim()).toBe(Redacted.value(config.jwt.secret))
    }))

  it.effect("writes no secret file when JWT_SECRET is set", () =>
    Effect.gen(function*() {
      const { config, defaulted } = yield* loadConfig({
        env: { AUTH_DATA_DIR: dataDir(), AUTH_JWT_SECRET: "explicit-secret" },
        envFile: envFile()
      }, NO_PROVIDERS)
      expect(Redacted.value(config.jwt.secret)).toBe("explicit-secret")
      expect(defaulted.some((line) => line.startsWith("AUTH_JWT_SECRET="))).toBe(false)
      expect(existsSync(dataDir())).toBe(false)
    }))

  it.effect("writes no secret file when the GOTRUE_ spelling or the .env file sets it", () =>
    Effect.gen(function*() {
      const viaAlias = yield* loadConfig({
        env: { AUTH_DATA_DIR: dataDir(), GOTRUE_JWT_SECRET: "alias-secret" },
        envFile: envFile()
      }, NO_PROVIDERS)
      expect(Redacted.value(viaAlias.config.jwt.secret)).toBe("alias-secret")
      writeEnvFile("AUTH_JWT_SECRET=file-secret\n")
      const viaFile = yield* loadConfig({ env: { AUTH_DATA_DIR: dataDir() }, envFile: envFile() }, NO_PROVIDERS)
      expect(Redacted.value(viaFile.config.jwt.secret)).toBe("file-secret")
      expect(existsSync(dataDir())).toBe(false)
    }))

  it.effect("never generates a secret in production: JWT_SECRET is reported instead", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(loadConfig({
        env: { AUTH_DATA_DIR: dataDir(), DATABASE_URL: "postgres://db/auth" },
        envFile: envFile()
      }, NO_PROVIDERS))
      expect(error).toBeInstanceOf(ConfigInvalid)
      expect(error.issues.map((issue) => issue.variable)).toContain("AUTH_JWT_SECRET")
      expect(existsSync(dataDir())).toBe(false)
    }))

  it.effect("fails with every issue when the configuration is invalid", () =>
    Effect.gen(function*() {
      writeEnvFile("AUTH_JWT_EXP=soon\n")
      const error = yield* Effect.flip(loadConfig({
        env: { AUTH_JWT_SECRET: "s", AUTH_DISABLE_SIGNUP: "maybe" },
        envFile: envFile()
      }, NO_PROVIDERS))
      expect(error.issues.map((issue) => issue.variable).sort()).toStrictEqual(["AUTH_DISABLE_SIGNUP", "AUTH_JWT_EXP"])
    }))

  it.effect("reads EXTERNAL_<NAME>_* for the identity providers it is given, and only those", () =>
    Effect.gen(function*() {
      const env = {
        AUTH_DATA_DIR: dataDir(),
        AUTH_EXTERNAL_ACME_ENABLED: "true",
        AUTH_EXTERNAL_ACME_CLIENT_ID: "id",
        AUTH_EXTERNAL_ACME_SECRET: "secret",
        AUTH_EXTERNAL_ACME_REDIRECT_URI: "https://auth.example.com/callback",
        AUTH_EXTERNAL_OTHER_ENABLED: "true"
      }
      const { config } = yield* loadConfig({ env, envFile: envFile() }, [{ name: "acme", urlRequired: false }])
      expect(config.external["acme"]?.enabled).toBe(true)
      expect(Object.keys(config.external)).toStrictEqual(["acme"])
      const error = yield* Effect.flip(loadConfig({ env, envFile: envFile() }, [{ name: "acme", urlRequired: true }]))
      expect(error.issues).toStrictEqual([{ variable: "AUTH_EXTERNAL_ACME_URL", rule: "is required when EXTERNAL_ACME_ENABLED is true" }])
    }))

  it.effect("reports a data directory it cannot use", () =>
    Effect.gen(function*() {
      const notADirectory = join(dir, "file")
      writeFileSync(notADirectory, "")
      const error = yield* Effect.flip(loadConfig({ env: { AUTH_DATA_DIR: notADirectory }, envFile: envFile() }, NO_PROVIDERS))
      expect(error.issues.map((issue) => issue.variable)).toStrictEqual(["AUTH_DATA_DIR"])
    }))
})
