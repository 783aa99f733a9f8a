import { describe, expect, it } from "@effect/vitest"
import { Either, Option, Redacted } from "effect"
import { parseDatabaseSettings } from "../../src/config/PlatformConfig.js"

const URL = "postgres://gatehouse@127.0.0.1:5432/auth"

describe("parseDatabaseSettings", () => {
  it("needs nothing but DATABASE_URL in production: no SMTP, JWT or URL settings", () => {
    const settings = Either.getOrThrow(parseDatabaseSettings({ DATABASE_URL: URL }))
    expect(settings.mode).toBe("postgres")
    expect(Option.map(settings.db.url, Redacted.value)).toEqual(Option.some(URL))
    // `migrate` is one process: the default of a single worker.
    expect(settings.db).toMatchObject({ driver: "postgres", maxPoolSize: 10, namespace: "" })
    expect(settings.log).toEqual({ level: "info", file: Option.none() })
  })

  it("is the embedded default without a database URL", () => {
    const settings = Either.getOrThrow(parseDatabaseSettings({}))
    expect(settings.mode).toBe("embedded")
    expect(settings.dataDir).toBe("./.gatehouse")
  })

  it("reads the pool size, namespace, data directory and logging under their usual names", () => {
    const settings = Either.getOrThrow(parseDatabaseSettings({
      GOTRUE_DB_DATABASE_URL: URL,
      AUTH_DB_DRIVER: "postgres",
      AUTH_DB_MAX_POOL_SIZE: "7",
      DB_NAMESPACE: "tenant_a",
      AUTH_DATA_DIR: "/var/lib/gatehouse",
      LOG_LEVEL: "warning",
      LOG_FILE: "/tmp/gatehouse.log"
    }))
    expect(settings.db).toMatchObject({ maxPoolSize: 7, namespace: "tenant_a" })
    expect(Either.getOrThrow(parseDatabaseSettings({ DATABASE_URL: URL, AUTH_DB_MAX_POOL_SIZE: "0" })).db.maxPoolSize).toBe(0)
    expect(settings.dataDir).toBe("/var/lib/gatehouse")
    expect(settings.log).toEqual({ level: "warn", file: Option.some("/tmp/gatehouse.log") })
  })

  it("reports every broken database setting under the name the operator set, without its value", () => {
    const issues = Either.getLeft(parseDatabaseSettings({
      DATABASE_URL: "mysql://secret-host/db",
      AUTH_DB_DRIVER: "mysql",
      AUTH_DB_NAMESPACE: "Not-An-Identifier",
      AUTH_DB_MAX_POOL_SIZE: "-1",
      LOG_LEVEL: "loud"
    })).pipe(Option.getOrThrow)
    expect(issues.map((issue) => issue.variable).sort()).toEqual(
      ["AUTH_DB_DRIVER", "AUTH_DB_MAX_POOL_SIZE", "AUTH_DB_NAMESPACE", "DATABASE_URL", "LOG_LEVEL"]
    )
    expect(JSON.stringify(issues)).not.toContain("secret-host")
  })
})
