import { describe, expect, it } from "@effect/vitest"
import { Duration, Either, FastCheck, Option, Redacted } from "effect"
import { OAUTH_PROVIDER_SPECS } from "../../src/auth/oauth/OAuthProviders.js"
import { type AppConfig, formatConfigIssues, parseAppConfig } from "../../src/config/AppConfig.js"
import type { ConfigIssue } from "../../src/config/SettingsReader.js"

type Env = Readonly<Record<string, string>>

const GENERATED_SECRET = "generated-dev-secret-kept-in-the-data-dir"

/**
 * The embedded default as loadConfig runs it: the data directory supplied the JWT secret, and the server's
 * composition handed in the auth registry's identity providers.
 */
const embedded = (env: Env) =>
  parseAppConfig(env, { embeddedJwtSecret: Redacted.make(GENERATED_SECRET), oauthProviders: OAUTH_PROVIDER_SPECS })

const productionEnv: Env = {
  DATABASE_URL: "postgres://auth:pw@db.internal:5432/auth",
  AUTH_SITE_URL: "https://app.example.com",
  API_EXTERNAL_URL: "https://auth.example.com",
  AUTH_JWT_SECRET: "production-secret-that-is-long-enough-0123456789",
  AUTH_DB_DRIVER: "postgres",
  AUTH_SMTP_ADMIN_EMAIL: "noreply@example.com",
  AUTH_SMTP_HOST: "smtp.example.com",
  AUTH_SMTP_PORT: "2525",
  // Without a key the IAM service is off in production, and start-up says so (its own test below).
  AUTH_IAM_ENABLED: "false",
  // Without it production warns that per-IP limits are off (tested on its own below).
  AUTH_RATE_LIMIT_HEADER: "X-Real-IP"
}

const config = (result: ReturnType<typeof parseAppConfig>): AppConfig =>
  Either.match(result, {
    onLeft: (issues) => {
      throw new Error(`expected a valid configuration, got:\n${formatConfigIssues(issues)}`)
    },
    onRight: ({ config }) => config
  })

const issues = (result: ReturnType<typeof parseAppConfig>): ReadonlyArray<ConfigIssue> =>
  Either.match(result, {
    onLeft: (issues) => issues,
    onRight: () => {
      throw new Error("expected configuration issues, got a valid configuration")
    }
  })

const variables = (result: ReturnType<typeof parseAppConfig>): ReadonlyArray<string> =>
  issues(result).map((issue) => issue.variable)

const seconds = (d: Duration.Duration): number => Duration.toSeconds(d)

describe("embedded default (no DATABASE_URL)", () => {
  it("starts with nothing set, on loopback, and lists what it filled in", () => {
    const result = embedded({})
    const { config, defaulted } = Either.getOrThrow(result)
    expect(config.mode).toBe("embedded")
    expect(config.siteUrl).toBe("http://localhost:8081")
    expect(config.api.externalUrl).toBe("http://localhost:8081")
    expect(config.api.host).toBe("127.0.0.1")
    expect(config.api.port).toBe(8081)
    expect(Redacted.value(config.jwt.secret)).toBe(GENERATED_SECRET)
    expect(Option.isNone(config.smtp.host)).toBe(true)
    // GoTrue's default: confirmation required, since /verify can confirm (through the outbox's links).
    expect(config.mailer.autoconfirm).toBe(false)
    expect(defaulted.some((line) => line.startsWith("AUTH_MAILER_AUTOCONFIRM="))).toBe(false)
    expect(defaulted).toContain("AUTH_SITE_URL=http://localhost:8081")
    expect(defaulted).toContain("API_EXTERNAL_URL=http://localhost:8081")
    expect(defaulted.some((line) => line.startsWith("AUTH_JWT_SECRET="))).toBe(true)
    expect(defaulted.join("\n")).not.toContain(GENERATED_SECRET)
  })

  it("uses the spec's defaults for everything optional", () => {
    const c = config(embedded({}))
    expect(c.uriAllowList).toStrictEqual([])
    expect(c.disableSignup).toBe(false)
    expect(c.externalEmailEnabled).toBe(true)
    expect(c.externalPhoneEnabled).toBe(false)
    expect(c.password).toStrictEqual({ minLength: 6, requiredCharacters: [] })
    // One process: the most one worker holds by default.
    expect(c.db.maxPoolSize).toBe(10)
    expect(c.db.namespace).toBe("")
    expect(c.log.level).toBe("info")
    expect(c.observability.prometheusHost).toBe("0.0.0.0")
    expect(c.observability.prometheusPort).toBe(9100)
    expect(c.jwt.exp).toBe(3600)
    expect(c.jwt.adminGroupName).toBe("admin")
    expect(c.security.refreshTokenRotationEnabled).toBe(true)
    expect(seconds(c.security.refreshTokenReuseInterval)).toBe(10)
    expect(c.mailer.urlPaths).toStrictEqual({
      invite: "/verify",
      confirmation: "/verify",
      recovery: "/verify",
      emailChange: "/verify"
    })
    expect(c.mailer.linkConfirmPage).toBe(false)
    // English only, with nothing of the operator's: every subject and body is the built-in English (GoTrue's).
    expect(c.mailer.localization.offer).toStrictEqual({ offered: ["en"], fallback: "en" })
    expect([...c.mailer.localization.byLocale]).toStrictEqual([["en", { subjects: {}, templates: {}, smsTemplate: Option.none() }]])
    expect(c.rateLimit.emailSent.events).toBe(30)
    expect(seconds(c.rateLimit.emailSent.per)).toBe(3600)
    expect(c.rateLimit.smsSent.events).toBe(30)
    expect(seconds(c.rateLimit.smsSent.per)).toBe(3600)
    expect(c.smtp.senderName).toBe(c.smtp.adminEmail)
  })

  it("builds the dev URLs on the configured port", () => {
    const { config, defaulted } = Either.getOrThrow(embedded({ PORT: "9000" }))
    expect(config.siteUrl).toBe("http://localhost:9000")
    expect(defaulted).toContain("AUTH_SITE_URL=http://localhost:9000")
  })

  it("takes what the operator set instead of a default, and does not list it", () => {
    const { config, defaulted } = Either.getOrThrow(embedded({
      AUTH_SITE_URL: "http://localhost:3000",
      AUTH_JWT_SECRET: "explicit-secret",
      AUTH_API_HOST: "0.0.0.0"
    }))
    expect(config.siteUrl).toBe("http://localhost:3000")
    expect(Redacted.value(config.jwt.secret)).toBe("explicit-secret")
    expect(config.api.host).toBe("0.0.0.0")
    expect(defaulted.some((line) => line.startsWith("AUTH_SITE_URL="))).toBe(false)
    expect(defaulted.some((line) => line.startsWith("AUTH_JWT_SECRET="))).toBe(false)
  })

  it("reads the host to listen on as API_HOST too, without a prefix; AUTH_API_HOST and GOTRUE_API_HOST win", () => {
    expect(config(embedded({})).api.host).toBe("127.0.0.1")
    expect(config(parseAppConfig(productionEnv)).api.host).toBe("0.0.0.0")
    expect(config(embedded({ API_HOST: "0.0.0.0" })).api.host).toBe("0.0.0.0")
    expect(config(parseAppConfig({ ...productionEnv, API_HOST: "10.0.0.5" })).api.host).toBe("10.0.0.5")
    expect(config(embedded({ API_HOST: "0.0.0.0", GOTRUE_API_HOST: "127.0.0.2" })).api.host).toBe("127.0.0.2")
    expect(config(embedded({ API_HOST: "0.0.0.0", GOTRUE_API_HOST: "127.0.0.2", AUTH_API_HOST: "127.0.0.3" })).api.host).toBe("127.0.0.3")
  })

  it("sends mail and texts to one address 1 s apart, with no minute between recovery and magic links, and lists it", () => {
    const { config, defaulted } = Either.getOrThrow(embedded({}))
    expect(seconds(config.smtp.maxFrequency)).toBe(1)
    expect(seconds(config.sms.maxFrequency)).toBe(1)
    expect(seconds(config.smtp.linkMinInterval)).toBe(0)
    expect(defaulted).toContain("AUTH_SMTP_MAX_FREQUENCY=1s (production: 900s, and recovery and magic-link mails at least 60s apart)")
    expect(defaulted).toContain("AUTH_SMS_MAX_FREQUENCY=1s (production: 60s)")
  })

  it("keeps an explicit send frequency, and then GoTrue's minute between recovery and magic links", () => {
    const { config, defaulted } = Either.getOrThrow(embedded({ GOTRUE_SMTP_MAX_FREQUENCY: "5s", AUTH_SMS_MAX_FREQUENCY: "0" }))
    expect(seconds(config.smtp.maxFrequency)).toBe(5)
    expect(seconds(config.sms.maxFrequency)).toBe(0)
    expect(seconds(config.smtp.linkMinInterval)).toBe(60)
    expect(defaulted.some((line) => line.includes("MAX_FREQUENCY"))).toBe(false)
  })

  it("needs a JWT secret from somewhere: without the generated one, JWT_SECRET is required", () => {
    expect(variables(parseAppConfig({}))).toStrictEqual(["AUTH_JWT_SECRET"])
  })
})

describe("production (DATABASE_URL set)", () => {
  it("reports every missing required variable in one Left", () => {
    const found = issues(parseAppConfig({ DATABASE_URL: "postgres://db/auth" }))
    const names = found.map((issue) => issue.variable)
    for (const required of ["SITE_URL", "API_EXTERNAL_URL", "JWT_SECRET", "DB_DRIVER", "SMTP_ADMIN_EMAIL", "SMTP_HOST", "SMTP_PORT"]) {
      expect(names.filter((name) => name.includes(required)), required).toHaveLength(1)
    }
    expect(found).toHaveLength(7)
    expect(found.every((issue) => issue.rule === "is required")).toBe(true)
  })

  it("does not accept the embedded generated secret in place of JWT_SECRET", () => {
    const { AUTH_JWT_SECRET: _omitted, ...rest } = productionEnv
    expect(variables(embedded(rest))).toStrictEqual(["AUTH_JWT_SECRET"])
  })

  it("starts when everything required is set, listening on all interfaces, with nothing defaulted", () => {
    const { config, defaulted } = Either.getOrThrow(parseAppConfig(productionEnv))
    expect(config.mode).toBe("postgres")
    expect(config.api.host).toBe("0.0.0.0")
    expect(defaulted).toStrictEqual([])
    expect(Option.map(config.db.url, Redacted.value)).toStrictEqual(Option.some(productionEnv.DATABASE_URL))
    expect(config.smtp.host).toStrictEqual(Option.some("smtp.example.com"))
    expect(config.smtp.port).toBe(2525)
    expect(config.smtp.senderName).toBe("noreply@example.com")
    expect(seconds(config.smtp.maxFrequency)).toBe(900)
    expect(seconds(config.sms.maxFrequency)).toBe(60)
    expect(seconds(config.smtp.linkMinInterval)).toBe(60)
  })

  it("accepts postgresql:// too and rejects other schemes", () => {
    expect(config(parseAppConfig({ ...productionEnv, DATABASE_URL: "postgresql://db/auth" })).mode).toBe("postgres")
    expect(issues(parseAppConfig({ ...productionEnv, DATABASE_URL: "mysql://db/auth" }))).toStrictEqual([
      { variable: "DATABASE_URL", rule: "must be a postgres:// or postgresql:// connection string" }
    ])
  })

  it("requires DB_DRIVER to be postgres", () => {
    expect(variables(parseAppConfig({ ...productionEnv, AUTH_DB_DRIVER: "mysql" }))).toStrictEqual(["AUTH_DB_DRIVER"])
  })

  it("starts with phone sign-in on and no SMS provider, as GoTrue does, with one warning naming what is missing", () => {
    const parsed = parseAppConfig({ ...productionEnv, AUTH_EXTERNAL_PHONE_ENABLED: "true" })
    expect(Either.isRight(parsed)).toBe(true)
    const { warnings } = Either.getOrThrow(parsed)
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain("AUTH_SMS_PROVIDER is not set")
    const complete = parseAppConfig({ ...productionEnv, AUTH_EXTERNAL_PHONE_ENABLED: "true", AUTH_SMS_PROVIDER: "vonage",
      AUTH_SMS_VONAGE_API_KEY: "key", AUTH_SMS_VONAGE_API_SECRET: "secret", AUTH_SMS_VONAGE_FROM: "Gatehouse" })
    expect(Either.getOrThrow(complete).warnings).toStrictEqual([])
  })

  it("reads the OAuth server's settings (off by default) and warns when on without a consent page or an asymmetric key", () => {
    expect(config(parseAppConfig(productionEnv)).oauthServer).toStrictEqual({
      enabled: false, allowDynamicRegistration: false, authorizationPath: "", authorizationTtl: Duration.minutes(10), defaultScope: "email"
    })
    const on = Either.getOrThrow(parseAppConfig({ ...productionEnv, GOTRUE_OAUTH_SERVER_ENABLED: "true", AUTH_OAUTH_SERVER_AUTHORIZATION_TTL: "5m",
      AUTH_OAUTH_SERVER_DEFAULT_SCOPE: "openid email", AUTH_OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION: "true" }))
    expect(on.config.oauthServer).toStrictEqual({
      enabled: true, allowDynamicRegistration: true, authorizationPath: "", authorizationTtl: Duration.minutes(5), defaultScope: "openid email"
    })
    expect(on.warnings).toHaveLength(2)
    expect(on.warnings[0]).toContain("AUTH_OAUTH_SERVER_AUTHORIZATION_PATH is not set")
    expect(on.warnings[1]).toContain("no asymmetric signing key")
  })

  it("names, in one warning, the AUTH_ and GOTRUE_ variables that are set but are no setting of Gatehouse's (a misspelling, a GoTrue feature not built)", () => {
    const parsed = Either.getOrThrow(parseAppConfig({
      ...productionEnv,
      GOTRUE_SMTP_HOSTNAME: "smtp.example.com",
      AUTH_JWT_SECRETS: "x",
      GOTRUE_EXTERNAL_GOOGLE_ENABLED: "true",
      GOTRUE_EXTERNAL_GOOGLE_CLIENT_ID: "id",
      GOTRUE_EXTERNAL_GOOGLE_SECRET: "secret",
      GOTRUE_EXTERNAL_GOOGLE_REDIRECT_URI: "https://auth.example.com/callback",
      // Set but empty is as unset, and variables of other programs are not Gatehouse's to judge.
      GOTRUE_UNHEARD_OF: " ",
      NODE_OPTIONS: "--max-old-space-size=512",
      SUPABASE_URL: "https://x.supabase.co"
    }, { oauthProviders: OAUTH_PROVIDER_SPECS }))
    expect(parsed.warnings).toStrictEqual(["set but not read (no such setting in Gatehouse): AUTH_JWT_SECRETS, GOTRUE_SMTP_HOSTNAME"])
    // A value never appears in the warning, only names.
    expect(parsed.warnings.join(" ")).not.toContain("smtp.example.com")
  })

  it("turns the IAM service off without a signing key, and says so unless AUTH_IAM_ENABLED=false says it first", () => {
    const { AUTH_IAM_ENABLED: _, ...unsaid } = productionEnv
    const parsed = Either.getOrThrow(parseAppConfig(unsaid))
    expect(parsed.config.iam.enabled).toBe(false)
    expect(parsed.warnings).toStrictEqual([
      "the IAM service is off: AUTH_IAM_PASETO_SECRET_KEY is not set (`node dist/main.js iam generate-key` makes one; AUTH_IAM_ENABLED=false says it is off on purpose)"
    ])
    expect(Either.getOrThrow(parseAppConfig(productionEnv)).warnings).toStrictEqual([])
    expect(variables(parseAppConfig({ ...unsaid, AUTH_IAM_ENABLED: "true" }))).toStrictEqual(["AUTH_IAM_PASETO_SECRET_KEY"])
  })

  it("refuses a JWT secret shorter than 32 bytes", () => {
    expect(issues(parseAppConfig({ ...productionEnv, AUTH_JWT_SECRET: "x".repeat(31) }))).toStrictEqual([
      { variable: "AUTH_JWT_SECRET", rule: "must be at least 32 bytes long" }
    ])
    // Bytes, not characters: 16 two-byte characters are enough.
    expect(Either.isRight(parseAppConfig({ ...productionEnv, AUTH_JWT_SECRET: "é".repeat(16) }))).toBe(true)
  })
})

describe("workers (AUTH_WORKERS)", () => {
  const production = (env: Env, cores = 8) => parseAppConfig({ ...productionEnv, ...env }, { cores })

  it("serves from every core in production unless told otherwise", () => {
    expect(config(production({}, 8)).workers).toBe(8)
    expect(config(production({}, 1)).workers).toBe(1)
    expect(config(production({ AUTH_WORKERS: "3" }, 8)).workers).toBe(3)
    expect(config(production({ GOTRUE_WORKERS: "2" }, 8)).workers).toBe(2)
    expect(Either.getOrThrow(production({ AUTH_WORKERS: "3" })).warnings).toStrictEqual([])
  })

  it("is one process in the embedded default; a larger setting starts anyway, with a warning naming its spelling", () => {
    expect(config(embedded({})).workers).toBe(1)
    expect(Either.getOrThrow(embedded({ AUTH_WORKERS: "1" })).warnings).toStrictEqual([])
    const parsed = Either.getOrThrow(embedded({ GOTRUE_WORKERS: "4" }))
    expect(parsed.config.workers).toBe(1)
    expect(parsed.warnings).toStrictEqual([
      "GOTRUE_WORKERS=4 is ignored: the embedded database serves from one process (set DATABASE_URL to use several)"
    ])
  })

  it("must be a whole number from 1 to 1024, in either mode, reported with the other issues", () => {
    for (const bad of ["0", "-2", "1.5", "two", "1025"]) {
      expect(issues(production({ AUTH_WORKERS: bad }))).toStrictEqual([
        { variable: "AUTH_WORKERS", rule: "must be a whole number from 1 to 1024" }
      ])
      expect(variables(embedded({ AUTH_WORKERS: bad }))).toStrictEqual(["AUTH_WORKERS"])
    }
    expect([...variables(production({ AUTH_WORKERS: "0", AUTH_JWT_EXP: "soon" }))].sort()).toStrictEqual(["AUTH_JWT_EXP", "AUTH_WORKERS"])
  })

  it("each worker's pool is by default a share of 60 connections, at most 10; a set size is taken, and 0 is no limit", () => {
    expect(config(production({}, 2)).db.maxPoolSize).toBe(10)
    expect(config(production({}, 8)).db.maxPoolSize).toBe(7)
    expect(config(production({ AUTH_WORKERS: "16" }, 2)).db.maxPoolSize).toBe(3)
    expect(config(production({ AUTH_WORKERS: "1" }, 64)).db.maxPoolSize).toBe(10)
    expect(config(production({ AUTH_DB_MAX_POOL_SIZE: "25" }, 8)).db.maxPoolSize).toBe(25)
    expect(config(production({ AUTH_DB_MAX_POOL_SIZE: "0" }, 8)).db.maxPoolSize).toBe(0)
    expect(config(production({ GOTRUE_DB_MAX_POOL_SIZE: "0" }, 8)).db.maxPoolSize).toBe(0)
    // An empty value is unset, as for every setting.
    expect(config(production({ AUTH_DB_MAX_POOL_SIZE: "" }, 8)).db.maxPoolSize).toBe(7)
  })

  it.prop("the default is the number of cores, capped at 1024; a set value is taken as it is", {
    cores: FastCheck.integer({ min: 1, max: 4096 }),
    set: FastCheck.option(FastCheck.integer({ min: 1, max: 1024 }), { nil: undefined })
  }, ({ cores, set }) => {
    const parsed = config(production(set === undefined ? {} : { AUTH_WORKERS: String(set) }, cores))
    expect(parsed.workers).toBe(set ?? Math.min(cores, 1024))
    expect(config(embedded(set === undefined ? {} : { AUTH_WORKERS: String(set) })).workers).toBe(1)
  })
})

describe("collecting issues", () => {
  it("reports every bad value at once", () => {
    const found = variables(embedded({
      AUTH_JWT_EXP: "soon",
      AUTH_PASSWORD_MIN_LENGTH: "0",
      AUTH_DISABLE_SIGNUP: "maybe",
      AUTH_SMTP_MAX_FREQUENCY: "often",
      LOG_LEVEL: "loud",
      PORT: "70000"
    }))
    expect([...found].sort()).toStrictEqual(
      ["AUTH_DISABLE_SIGNUP", "AUTH_JWT_EXP", "AUTH_PASSWORD_MIN_LENGTH", "AUTH_SMTP_MAX_FREQUENCY", "LOG_LEVEL", "PORT"]
    )
  })

  it("formats them as one message", () => {
    const text = formatConfigIssues([
      { variable: "AUTH_JWT_EXP", rule: "must be a whole number from 1 to 604800" },
      { variable: "LOG_LEVEL", rule: "must be one of: info" }
    ])
    expect(text).toBe(
      "Invalid configuration (2 problems):\n  - AUTH_JWT_EXP must be a whole number from 1 to 604800\n  - LOG_LEVEL must be one of: info"
    )
    expect(formatConfigIssues([{ variable: "X", rule: "y" }])).toBe("Invalid configuration (1 problem):\n  - X y")
  })
})

describe("spellings", () => {
  it("reads GOTRUE_ as an alias of AUTH_", () => {
    const c = config(embedded({ GOTRUE_SITE_URL: "https://legacy.example.com", GOTRUE_JWT_EXP: "600" }))
    expect(c.siteUrl).toBe("https://legacy.example.com")
    expect(c.jwt.exp).toBe(600)
  })

  it("prefers AUTH_ when both are set", () => {
    const c = config(embedded({
      AUTH_SITE_URL: "https://new.example.com",
      GOTRUE_SITE_URL: "https://old.example.com",
      AUTH_JWT_EXP: "900",
      GOTRUE_JWT_EXP: "not a number"
    }))
    expect(c.siteUrl).toBe("https://new.example.com")
    expect(c.jwt.exp).toBe(900)
  })

  it("treats a blank value as unset, so the next spelling applies", () => {
    expect(config(embedded({ AUTH_JWT_EXP: "  ", GOTRUE_JWT_EXP: "120" })).jwt.exp).toBe(120)
  })

  it("names the spelling the operator used in an issue", () => {
    expect(variables(embedded({ GOTRUE_JWT_EXP: "x" }))).toStrictEqual(["GOTRUE_JWT_EXP"])
    expect(variables(embedded({ GOTRUE_SITE_URL: "example.com" }))).toStrictEqual(["GOTRUE_SITE_URL"])
    expect(variables(embedded({ AUTH_API_EXTERNAL_URL: "example.com" }))).toStrictEqual(["AUTH_API_EXTERNAL_URL"])
    expect(variables(parseAppConfig({ ...productionEnv, DATABASE_URL: "", AUTH_DB_DATABASE_URL: "mysql://db" })))
      .toStrictEqual(["AUTH_DB_DATABASE_URL"])
  })

  it("reads PORT, DATABASE_URL and LOG_LEVEL without a prefix", () => {
    expect(config(embedded({ PORT: "9999" })).api.port).toBe(9999)
    expect(config(embedded({ LOG_LEVEL: "debug" })).log.level).toBe("debug")
    expect(config(embedded({ LOG_LEVEL: "WARNING" })).log.level).toBe("warn")
    const c = config(parseAppConfig(productionEnv))
    expect(c.mode).toBe("postgres")
    expect(Option.map(c.db.url, Redacted.value)).toStrictEqual(Option.some(productionEnv.DATABASE_URL))
  })

  it("also reads the prefixed spellings of those, and they win over the bare name", () => {
    expect(config(embedded({ AUTH_API_PORT: "7000", PORT: "9999" })).api.port).toBe(7000)
    expect(config(embedded({ AUTH_LOG_LEVEL: "error", LOG_LEVEL: "debug" })).log.level).toBe("error")
    const { DATABASE_URL: _omitted, ...rest } = productionEnv
    expect(config(parseAppConfig({ ...rest, AUTH_DB_DATABASE_URL: "postgres://other/auth" })).mode).toBe("postgres")
  })

  it("does not read other settings without a prefix", () => {
    expect(config(embedded({ JWT_EXP: "not a number", SITE_URL: "nope" })).jwt.exp).toBe(3600)
  })
})

describe("typed values", () => {
  it.each([
    ["true", true],
    ["TRUE", true],
    ["1", true],
    ["t", true],
    ["yes", true],
    ["on", true],
    ["false", false],
    ["0", false],
    ["f", false],
    ["no", false],
    ["off", false]
  ] as const)("boolean %s", (raw, expected) => {
    expect(config(embedded({ AUTH_DISABLE_SIGNUP: raw })).disableSignup).toBe(expected)
  })

  it("integers within bounds", () => {
    const c = config(embedded({ AUTH_JWT_EXP: "7200", AUTH_DB_MAX_POOL_SIZE: "25", AUTH_PASSWORD_MIN_LENGTH: "12" }))
    expect(c.jwt.exp).toBe(7200)
    expect(c.db.maxPoolSize).toBe(25)
    expect(c.password.minLength).toBe(12)
  })

  it.each([
    ["10s", 10],
    ["1h30m", 5400],
    ["90", 90],
    ["1.5", 1.5],
    ["250ms", 0.25]
  ] as const)("duration %s", (raw, expected) => {
    const c = config(embedded({
      AUTH_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL: raw,
      AUTH_MAILER_OTP_EXP: raw,
      AUTH_SMTP_MAX_FREQUENCY: raw,
      AUTH_SMS_OTP_EXP: raw
    }))
    expect(seconds(c.security.refreshTokenReuseInterval)).toBe(expected)
    expect(seconds(c.mailer.otpExp)).toBe(expected)
    expect(seconds(c.smtp.maxFrequency)).toBe(expected)
    expect(seconds(c.sms.otpExp)).toBe(expected)
  })

  it("lists, URLs and required characters", () => {
    const c = config(embedded({
      AUTH_URI_ALLOW_LIST: "https://a.example.com/**, http://localhost:3000 ,,",
      AUTH_JWT_ADMIN_ROLES: "admin,ops",
      AUTH_PASSWORD_REQUIRED_CHARACTERS: "abc:ABC:0123\\:"
    }))
    expect(c.uriAllowList).toStrictEqual(["https://a.example.com/**", "http://localhost:3000"])
    expect(c.jwt.adminRoles).toStrictEqual(["admin", "ops"])
    expect(c.password.requiredCharacters).toStrictEqual(["abc", "ABC", "0123:"])
  })

  it("refuses an URI_ALLOW_LIST entry that could never match, naming it", () => {
    expect(issues(embedded({ GOTRUE_URI_ALLOW_LIST: "https://ok.example.com/**,app.example.com/*" }))).toStrictEqual([
      { variable: "GOTRUE_URI_ALLOW_LIST", rule: "entry \"app.example.com/*\" must be scheme://host[:port][/path], with * or ** as wildcards" }
    ])
  })

  it("CORS_ALLOWED_ORIGINS: unset, every origin (GoTrue's); set, the listed origins; an entry that is no origin stops start-up", () => {
    expect(config(embedded({})).api.corsAllowedOrigins).toStrictEqual([])
    expect(config(embedded({ AUTH_CORS_ALLOWED_ORIGINS: "https://app.example.com, https://*.preview.example.com ,," })).api.corsAllowedOrigins)
      .toStrictEqual(["https://app.example.com", "https://*.preview.example.com"])
    expect(issues(embedded({ GOTRUE_CORS_ALLOWED_ORIGINS: "https://ok.example.com,https://app.example.com/path" }))).toStrictEqual([
      { variable: "GOTRUE_CORS_ALLOWED_ORIGINS", rule: "entry \"https://app.example.com/path\" must be an origin, scheme://host[:port], with no path" }
    ])
  })

  it("SECURITY_OAUTH_BROWSER_BINDING_ENABLED is on unless turned off", () => {
    expect(config(embedded({})).security.oauthBrowserBindingEnabled).toBe(true)
    expect(config(embedded({ AUTH_SECURITY_OAUTH_BROWSER_BINDING_ENABLED: "false" })).security.oauthBrowserBindingEnabled).toBe(false)
  })

  it.each([
    ["30", 30, 3600],
    ["10/15m", 10, 900],
    ["2.5/1h", 2.5, 3600],
    ["5/60", 5, 60]
  ] as const)("RATE_LIMIT_EMAIL_SENT %s", (raw, events, perSeconds) => {
    const { emailSent, smsSent } = config(embedded({ AUTH_RATE_LIMIT_EMAIL_SENT: raw, GOTRUE_RATE_LIMIT_SMS_SENT: raw })).rateLimit
    expect(emailSent.events).toBe(events)
    expect(seconds(emailSent.per)).toBe(perSeconds)
    expect(smsSent.events).toBe(events)
    expect(seconds(smsSent.per)).toBe(perSeconds)
  })

  it("has no per-recipient limits unless set", () => {
    const { emailPerRecipient, smsPerRecipient } = config(embedded({})).rateLimit
    expect(Option.isNone(emailPerRecipient)).toBe(true)
    expect(Option.isNone(smsPerRecipient)).toBe(true)
  })

  it.each([
    ["3", 3, 3600],
    ["5/15m", 5, 900],
    ["1/60", 1, 60],
    ["1000/24h", 1000, 86_400]
  ] as const)("RATE_LIMIT_EMAIL_PER_RECIPIENT and RATE_LIMIT_SMS_PER_RECIPIENT %s", (raw, events, perSeconds) => {
    const { emailPerRecipient, smsPerRecipient } = config(embedded({ AUTH_RATE_LIMIT_EMAIL_PER_RECIPIENT: raw, GOTRUE_RATE_LIMIT_SMS_PER_RECIPIENT: raw })).rateLimit
    for (const limit of [emailPerRecipient, smsPerRecipient]) {
      const { events: n, per } = Option.getOrThrow(limit)
      expect([n, seconds(per)]).toEqual([events, perSeconds])
    }
  })

  it.each(["0", "2.5", "1001", "-1", "3/0s", "3/", "three", "3/1h/2"])("rejects RATE_LIMIT_EMAIL_PER_RECIPIENT %j (a whole number from 1 to 1000)", (raw) => {
    expect(issues(embedded({ AUTH_RATE_LIMIT_EMAIL_PER_RECIPIENT: raw, AUTH_RATE_LIMIT_SMS_PER_RECIPIENT: raw }))).toStrictEqual([
      {
        variable: "AUTH_RATE_LIMIT_EMAIL_PER_RECIPIENT",
        rule: "must be a whole number of emails per hour from 1 to 1000, or N/duration such as 3/15m (unset: no limit)"
      },
      {
        variable: "AUTH_RATE_LIMIT_SMS_PER_RECIPIENT",
        rule: "must be a whole number of texts per hour from 1 to 1000, or N/duration such as 3/15m (unset: no limit)"
      }
    ])
  })
})

describe("per-IP request limits", () => {
  const limit = (events: number, perSeconds: number, burst: number) => ({ events, perSeconds, burst })
  const read = (c: AppConfig) =>
    Object.fromEntries((["otp", "anonymousUsers", "tokenRefresh", "verify", "verifyGuesses", "sso", "web3", "passkey", "oauthClientRegister", "oauthAuthorize"] as const).map((name) => {
      const { burst, events, per } = c.rateLimit[name]
      return [name, limit(events, seconds(per), burst)]
    }))

  it("has GoTrue's defaults: 30 per 5 minutes in bursts of 30, anonymous sign-ins 30 an hour, token 150", () => {
    const c = config(embedded({}))
    expect(Option.isNone(c.api.clientHeader)).toBe(true)
    expect(read(c)).toStrictEqual({
      otp: limit(30, 300, 30),
      anonymousUsers: limit(30, 3600, 30),
      tokenRefresh: limit(150, 300, 30),
      verify: limit(30, 300, 30),
      // Gatehouse's own, counted with or without a header (RateLimits.chargeGuess).
      verifyGuesses: limit(30, 300, 30),
      sso: limit(30, 300, 30),
      web3: limit(30, 300, 30),
      passkey: limit(30, 300, 30),
      oauthClientRegister: limit(10, 300, 30),
      // Gatehouse's own: GoTrue does not limit /oauth/authorize.
      oauthAuthorize: limit(60, 300, 60)
    })
  })

  it("reads every setting under either prefix, decimals and exponents included, as Go's float parser does", () => {
    const c = config(embedded({
      GOTRUE_RATE_LIMIT_HEADER: "X-Forwarded-For",
      AUTH_RATE_LIMIT_OTP: "2.5",
      GOTRUE_RATE_LIMIT_ANONYMOUS_USERS: "7.9",
      AUTH_RATE_LIMIT_TOKEN_REFRESH: "1e3",
      AUTH_RATE_LIMIT_VERIFY: ".5",
      GOTRUE_RATE_LIMIT_VERIFY_GUESSES: "3",
      AUTH_RATE_LIMIT_SSO: "0",
      AUTH_RATE_LIMIT_WEB3: "12.",
      AUTH_RATE_LIMIT_PASSKEY: "4",
      GOTRUE_RATE_LIMIT_OAUTH_DYNAMIC_CLIENT_REGISTER: "5",
      AUTH_RATE_LIMIT_OAUTH_AUTHORIZE: "20"
    }))
    expect(c.api.clientHeader).toStrictEqual(Option.some("X-Forwarded-For"))
    expect(read(c)).toStrictEqual({
      otp: limit(2.5, 300, 30),
      // Go's int(): the burst of anonymous sign-ins is the number cut to a whole one.
      anonymousUsers: limit(7.9, 3600, 7),
      tokenRefresh: limit(1000, 300, 30),
      verify: limit(0.5, 300, 30),
      verifyGuesses: limit(3, 300, 30),
      sso: limit(0, 300, 30),
      web3: limit(12, 300, 30),
      passkey: limit(4, 300, 30),
      oauthClientRegister: limit(5, 300, 30),
      oauthAuthorize: limit(20, 300, 60)
    })
  })

  it.each(["-1", "lots", "Inf", "NaN", "1/5m", "0x10", "1e999", "30 per minute"])("refuses %j, naming the variable", (raw) => {
    for (const name of ["OTP", "ANONYMOUS_USERS", "TOKEN_REFRESH", "VERIFY", "VERIFY_GUESSES", "SSO", "WEB3", "PASSKEY", "OAUTH_AUTHORIZE"]) {
      expect(issues(embedded({ [`GOTRUE_RATE_LIMIT_${name}`]: raw }))).toStrictEqual([
        { variable: `GOTRUE_RATE_LIMIT_${name}`, rule: "must be a number of requests, not negative (decimals allowed, e.g. 30 or 2.5)" }
      ])
    }
  })

  it("warns once in production that per-IP limits are off without RATE_LIMIT_HEADER; never in the embedded default", () => {
    const { AUTH_RATE_LIMIT_HEADER: _, ...withoutHeader } = productionEnv
    expect(Either.getOrThrow(parseAppConfig(withoutHeader)).warnings).toStrictEqual([
      "AUTH_RATE_LIMIT_HEADER is not set: per-IP request rate limits (RATE_LIMIT_OTP, RATE_LIMIT_TOKEN_REFRESH, RATE_LIMIT_VERIFY, RATE_LIMIT_ANONYMOUS_USERS) are off"
    ])
    expect(Either.getOrThrow(parseAppConfig({ ...withoutHeader, GOTRUE_RATE_LIMIT_HEADER: "X-Real-IP" })).warnings).toStrictEqual([])
    expect(Either.getOrThrow(embedded({})).warnings).toStrictEqual([])
  })
})

describe("rules", () => {
  it.each([
    ["AUTH_JWT_EXP", "0", "must be a whole number from 1 to 604800"],
    ["AUTH_JWT_EXP", "1.5", "must be a whole number"],
    ["AUTH_DB_MAX_POOL_SIZE", "-1", "must be a whole number from 0 to 10000"],
    ["AUTH_SMTP_PORT", "0", "must be a whole number from 1 to 65535"],
    ["PORT", "http", "must be a whole number from 0 to 65535"],
    ["AUTH_PASSWORD_MIN_LENGTH", "73", "must be a whole number from 1 to 72"],
    ["AUTH_MAILER_OTP_LENGTH", "4", "must be a whole number from 6 to 10"],
    ["AUTH_SMS_OTP_LENGTH", "11", "must be a whole number from 6 to 10"],
    ["AUTH_EXTERNAL_EMAIL_ENABLED", "enabled", "must be a boolean"],
    ["AUTH_MAILER_OTP_EXP", "1d", "must be a duration"],
    ["AUTH_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL", "-10s", "must be a duration"],
    ["AUTH_OAUTH_SERVER_AUTHORIZATION_TTL", "0", "must be at least 1s"],
    ["AUTH_OAUTH_SERVER_AUTHORIZATION_TTL", "999ms", "must be at least 1s"],
    ["GOTRUE_OAUTH_SERVER_AUTHORIZATION_TTL", "0s", "must be at least 1s"],
    ["LOG_LEVEL", "verbose", "must be one of: panic, fatal, error, warn, warning, info, debug, trace"],
    ["AUTH_METRICS_EXPORTER", "statsd", "must be one of: opentelemetry, prometheus"],
    ["AUTH_TRACING_EXPORTER", "zipkin", "must be one of: opentelemetry"],
    ["AUTH_SECURITY_CAPTCHA_PROVIDER", "recaptcha", "must be one of: hcaptcha, turnstile"],
    ["AUTH_SECURITY_CAPTCHA_VERIFY_URL", "localhost:9000/siteverify", "must be an absolute http(s) URL"],
    ["AUTH_SITE_URL", "example.com", "must be an absolute http(s) URL"],
    ["AUTH_SITE_URL", "ftp://example.com", "must be an absolute http(s) URL"],
    ["API_EXTERNAL_URL", "/auth/v1", "must be an absolute http(s) URL"],
    ["AUTH_API_ENDPOINT", "operator", "must be an absolute http(s) URL"],
    ["AUTH_MAILER_TEMPLATES_INVITE", "invite.html", "must be an absolute http(s) URL"],
    ["AUTH_SMTP_ADMIN_EMAIL", "noreply", "must be an email address"],
    ["AUTH_DB_DRIVER", "sqlite", "must be postgres"],
    ["AUTH_RATE_LIMIT_EMAIL_SENT", "lots", "must be a number of emails per hour"],
    ["AUTH_RATE_LIMIT_EMAIL_SENT", "10/", "must be a number of emails per hour"],
    ["AUTH_RATE_LIMIT_EMAIL_SENT", "10/15m/1h", "must be a number of emails per hour"],
    ["AUTH_RATE_LIMIT_EMAIL_SENT", "10/0s", "must be a number of emails per hour"],
    ["AUTH_RATE_LIMIT_SMS_SENT", "often", "must be a number of texts per hour"],
    ["AUTH_JWT_VALID_METHODS", "HS256,none", "must list only: HS256, RS256, RS512, ES256, ES512, EdDSA"],
    ["AUTH_OTEL_EXPORTER_PROMETHEUS_PORT", "0", "must be a whole number from 1 to 65535"]
  ] as const)("%s=%j", (variable, value, rule) => {
    const found = issues(embedded({ [variable]: value }))
    expect(found).toHaveLength(1)
    expect(found[0]!.variable).toBe(variable)
    expect(found[0]!.rule).toContain(rule)
  })

  it.each([["DB_NAMESPACE"], ["GOTRUE_DB_NAMESPACE"], ["AUTH_DB_NAMESPACE"]])(
    "%s=auth, a GoTrue deployment's value (its schema's name), is GoTrue's auth schema itself: no table prefix",
    (variable) => {
      expect(config(embedded({ [variable]: "auth" })).db.namespace).toBe("")
    }
  )

  it.each(["_private", "gatehouse_2", "authx", "a".repeat(41)])("DB_NAMESPACE %j is an identifier", (namespace) => {
    expect(config(embedded({ AUTH_DB_NAMESPACE: namespace })).db.namespace).toBe(namespace)
  })

  it.each(["Auth", "1auth", "auth-v2", "auth;drop table users", "a.b", "a".repeat(42)])(
    "DB_NAMESPACE %j is not an identifier",
    (namespace) => {
      const found = issues(embedded({ AUTH_DB_NAMESPACE: namespace }))
      expect(found.map((issue) => issue.variable)).toStrictEqual(["AUTH_DB_NAMESPACE"])
      expect(found[0]!.rule).toContain("SQL identifier")
    }
  )

  it("accepts JWT_KEYS as a JSON array of JWK objects", () => {
    const keys = [{ kty: "oct", k: "c2VjcmV0", kid: "one" }, { kty: "EC", crv: "P-256", kid: "two" }]
    expect(config(embedded({ AUTH_JWT_KEYS: JSON.stringify(keys) })).jwt.keys).toStrictEqual(keys)
    expect(config(embedded({ AUTH_JWT_KEYS: "[]" })).jwt.keys).toStrictEqual([])
  })

  it.each(["{\"kty\":\"oct\"}", "[1, 2]", "[[]]", "[null]", "not json", "\"[]\""])("rejects JWT_KEYS %j", (raw) => {
    expect(issues(embedded({ AUTH_JWT_KEYS: raw }))).toStrictEqual([
      { variable: "AUTH_JWT_KEYS", rule: "must be a JSON array of JWK objects" }
    ])
  })

  it("requires the captcha secret when captcha is enabled", () => {
    expect(variables(embedded({ AUTH_SECURITY_CAPTCHA_ENABLED: "true" }))).toStrictEqual(["AUTH_SECURITY_CAPTCHA_SECRET"])
    const c = config(embedded({
      AUTH_SECURITY_CAPTCHA_ENABLED: "true",
      AUTH_SECURITY_CAPTCHA_PROVIDER: "turnstile",
      AUTH_SECURITY_CAPTCHA_SECRET: "captcha-secret",
      AUTH_SECURITY_CAPTCHA_TIMEOUT: "5s"
    }))
    expect(c.security.captcha.provider).toBe("turnstile")
    expect(seconds(c.security.captcha.timeout)).toBe(5)
    expect(c.security.captcha.verifyUrl).toStrictEqual(Option.none())
    const proxied = config(embedded({ AUTH_SECURITY_CAPTCHA_VERIFY_URL: "http://egress.internal:3128/siteverify" }))
    expect(proxied.security.captcha.verifyUrl).toStrictEqual(Option.some("http://egress.internal:3128/siteverify"))
  })
})

describe("external OAuth providers", () => {
  it("reports every missing credential of an enabled provider", () => {
    const found = issues(embedded({ AUTH_EXTERNAL_GITHUB_ENABLED: "true" }))
    expect(found).toStrictEqual([
      { variable: "AUTH_EXTERNAL_GITHUB_CLIENT_ID", rule: "is required when EXTERNAL_GITHUB_ENABLED is true" },
      { variable: "AUTH_EXTERNAL_GITHUB_SECRET", rule: "is required when EXTERNAL_GITHUB_ENABLED is true" },
      { variable: "AUTH_EXTERNAL_GITHUB_REDIRECT_URI", rule: "is required when EXTERNAL_GITHUB_ENABLED is true" }
    ])
  })

  it("reads a complete provider", () => {
    const github = config(embedded({
      AUTH_EXTERNAL_GITHUB_ENABLED: "true",
      AUTH_EXTERNAL_GITHUB_CLIENT_ID: "client-id",
      AUTH_EXTERNAL_GITHUB_SECRET: "client-secret",
      AUTH_EXTERNAL_GITHUB_REDIRECT_URI: "https://auth.example.com/callback"
    })).external["github"]!
    expect(github.enabled).toBe(true)
    expect(github.clientId).toBe("client-id")
    expect(Option.map(github.secret, Redacted.value)).toStrictEqual(Option.some("client-secret"))
    expect(github.redirectUri).toBe("https://auth.example.com/callback")
    expect(github.url).toStrictEqual(Option.none())
  })

  it("does not require credentials of a disabled provider", () => {
    const c = config(embedded({ AUTH_EXTERNAL_GOOGLE_CLIENT_ID: "half-configured" }))
    expect(c.external["google"]?.enabled).toBe(false)
  })

  it("checks the redirect URI is a URL", () => {
    expect(variables(embedded({ AUTH_EXTERNAL_GITLAB_REDIRECT_URI: "callback" }))).toStrictEqual(
      ["AUTH_EXTERNAL_GITLAB_REDIRECT_URI"]
    )
  })

  it("requires the Keycloak instance URL", () => {
    const keycloak = {
      AUTH_EXTERNAL_KEYCLOAK_ENABLED: "true",
      AUTH_EXTERNAL_KEYCLOAK_CLIENT_ID: "id",
      AUTH_EXTERNAL_KEYCLOAK_SECRET: "secret",
      AUTH_EXTERNAL_KEYCLOAK_REDIRECT_URI: "https://auth.example.com/callback"
    }
    expect(variables(embedded(keycloak))).toStrictEqual(["AUTH_EXTERNAL_KEYCLOAK_URL"])
    const c = config(embedded({ ...keycloak, AUTH_EXTERNAL_KEYCLOAK_URL: "https://sso.example.com/realms/main" }))
    expect(c.external["keycloak"]?.url).toStrictEqual(Option.some("https://sso.example.com/realms/main"))
  })

  it("leaves an unset URL unset: a provider's default hosts are its descriptor's (gitlab's public instance)", () => {
    expect(config(embedded({})).external["gitlab"]?.url).toStrictEqual(Option.none())
    expect(config(embedded({ AUTH_EXTERNAL_GITLAB_URL: "https://git.example.com" })).external["gitlab"]?.url)
      .toStrictEqual(Option.some("https://git.example.com"))
  })

  it("reads no provider it is not given", () => {
    expect(config(parseAppConfig({ AUTH_EXTERNAL_GITHUB_ENABLED: "true" }, { embeddedJwtSecret: Redacted.make(GENERATED_SECRET) })).external)
      .toStrictEqual({})
  })
})

describe("SMS providers", () => {
  it("starts with a provider whose credentials are empty, warning once with every missing name", () => {
    const { warnings } = Either.getOrThrow(embedded({ AUTH_EXTERNAL_PHONE_ENABLED: "true", AUTH_SMS_PROVIDER: "twilio" }))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain("AUTH_SMS_TWILIO_ACCOUNT_SID, AUTH_SMS_TWILIO_AUTH_TOKEN, AUTH_SMS_TWILIO_MESSAGE_SERVICE_SID are not set")
  })

  it.each([
    ["messagebird", ["AUTH_SMS_MESSAGEBIRD_ACCESS_KEY", "AUTH_SMS_MESSAGEBIRD_ORIGINATOR"]],
    ["textlocal", ["AUTH_SMS_TEXTLOCAL_API_KEY", "AUTH_SMS_TEXTLOCAL_SENDER"]],
    ["vonage", ["AUTH_SMS_VONAGE_API_KEY", "AUTH_SMS_VONAGE_API_SECRET", "AUTH_SMS_VONAGE_FROM"]]
  ] as const)("names the missing %s credentials in its warning", (provider, expected) => {
    const parsed = Either.getOrThrow(embedded({ AUTH_EXTERNAL_PHONE_ENABLED: "true", AUTH_SMS_PROVIDER: provider }))
    expect(parsed.config.sms.provider).toStrictEqual(Option.some(provider))
    expect(parsed.warnings).toStrictEqual([`AUTH_SMS_PROVIDER is ${provider} but ${expected.join(", ")} are not set: texts cannot be sent (SMS_TEST_OTP numbers still work)`])
  })

  it("reads SMS_TEST_OTP as phone:code pairs, with or without +, and refuses anything else", () => {
    const c = config(embedded({ AUTH_SMS_TEST_OTP: "+15551234567:123456, 4915112345678:000111" }))
    expect([...c.sms.testOtp]).toStrictEqual([["15551234567", "123456"], ["4915112345678", "000111"]])
    expect(config(embedded({})).sms.testOtp.size).toBe(0)
    for (const bad of ["15551234567", "15551234567:12", "abc:123456", "15551234567:123456,x"]) {
      expect(variables(embedded({ AUTH_SMS_TEST_OTP: bad }))).toStrictEqual(["AUTH_SMS_TEST_OTP"])
    }
  })

  it("reads SMS_TEMPLATE, GoTrue's body by default, and MAILER_SECURE_EMAIL_CHANGE_ENABLED, on by default", () => {
    const smsTemplate = (env: Env) => config(embedded(env)).mailer.localization.byLocale.get("en")?.smsTemplate
    expect(smsTemplate({})).toStrictEqual(Option.none())
    expect(smsTemplate({ GOTRUE_SMS_TEMPLATE: "{{.Code}} is your Acme code" })).toStrictEqual(Option.some("{{.Code}} is your Acme code"))
    expect(config(embedded({})).mailer.secureEmailChangeEnabled).toBe(true)
    expect(config(embedded({ AUTH_MAILER_SECURE_EMAIL_CHANGE_ENABLED: "false" })).mailer.secureEmailChangeEnabled).toBe(false)
  })

  it("reads a complete Twilio setup", () => {
    const c = config(embedded({
      AUTH_EXTERNAL_PHONE_ENABLED: "true",
      AUTH_SMS_PROVIDER: "Twilio",
      AUTH_SMS_TWILIO_ACCOUNT_SID: "AC123",
      AUTH_SMS_TWILIO_AUTH_TOKEN: "token",
      AUTH_SMS_TWILIO_MESSAGE_SERVICE_SID: "+15550100"
    }))
    expect(c.externalPhoneEnabled).toBe(true)
    expect(c.sms.provider).toStrictEqual(Option.some("twilio"))
    expect(Option.map(c.sms.twilio.authToken, Redacted.value)).toStrictEqual(Option.some("token"))
  })

  it("does not require credentials while phone sign-up is off", () => {
    expect(config(embedded({ AUTH_SMS_PROVIDER: "twilio" })).sms.provider).toStrictEqual(Option.some("twilio"))
  })

  it("rejects an unknown provider", () => {
    expect(issues(embedded({ AUTH_SMS_PROVIDER: "carrier-pigeon" }))).toStrictEqual([
      { variable: "AUTH_SMS_PROVIDER", rule: "must be one of: twilio, messagebird, textlocal, vonage" }
    ])
  })
})

describe("issue texts never contain the offending value", () => {
  // Each of these rejects a secret-looking value: an operator who pastes a key into the wrong variable
  // must not find it in the start-up log.
  const targets = [
    "AUTH_JWT_EXP",
    "AUTH_DB_MAX_POOL_SIZE",
    "AUTH_SMTP_PORT",
    "PORT",
    "AUTH_DISABLE_SIGNUP",
    "AUTH_SMTP_MAX_FREQUENCY",
    "LOG_LEVEL",
    "AUTH_SITE_URL",
    "API_EXTERNAL_URL",
    "AUTH_JWT_KEYS",
    "AUTH_DB_NAMESPACE",
    "AUTH_JWT_VALID_METHODS",
    "AUTH_SMS_PROVIDER",
    "AUTH_RATE_LIMIT_EMAIL_SENT",
    "AUTH_RATE_LIMIT_SMS_SENT",
    "AUTH_RATE_LIMIT_OTP",
    "AUTH_RATE_LIMIT_TOKEN_REFRESH",
    "AUTH_SECURITY_CAPTCHA_PROVIDER",
    "AUTH_EXTERNAL_GITHUB_REDIRECT_URI",
    "AUTH_MAILER_TEMPLATES_RECOVERY",
    "AUTH_SMTP_ADMIN_EMAIL",
    "AUTH_WORKERS"
  ] as const

  // A capital letter keeps it from being a valid identifier for DB_NAMESPACE.
  const secretLooking = FastCheck.tuple(
    FastCheck.constantFrom("sk_live_", "ghp_", "eyJhbGciOi", "AKIA", "xoxb-"),
    FastCheck.stringMatching(/^[A-Za-z0-9_-]{16,40}$/)
  ).map(([prefix, body]) => `${prefix}${body}Q`)

  it.prop("in any variable", { secret: secretLooking, variable: FastCheck.constantFrom(...targets) }, ({ secret, variable }) => {
    const found = issues(embedded({ [variable]: secret }))
    expect(found.map((issue) => issue.variable)).toContain(variable)
    expect(formatConfigIssues(found)).not.toContain(secret)
  })

  it.prop("in production, with all of them wrong at once", { secret: secretLooking }, ({ secret }) => {
    const env = Object.fromEntries(targets.map((variable) => [variable, secret]))
    const found = issues(parseAppConfig(
      { ...productionEnv, ...env, DATABASE_URL: `postgres://u:${secret}@db/auth` },
      { oauthProviders: OAUTH_PROVIDER_SPECS }
    ))
    expect(found.length).toBeGreaterThanOrEqual(targets.length)
    expect(formatConfigIssues(found)).not.toContain(secret)
  })
})

describe("MFA, passkeys and the WebAuthn relying party", () => {
  it("defaults as GoTrue: TOTP on, phone and WebAuthn off, five-minute lifetimes, ten factors", () => {
    const { mfa, passkey } = config(embedded({}))
    expect([mfa.totp, mfa.phone.enroll, mfa.phone.verify, mfa.webauthn]).toStrictEqual([
      { enroll: true, verify: true }, false, false, { enroll: false, verify: false }
    ])
    expect([seconds(mfa.challengeExpiry), seconds(mfa.factorExpiry), mfa.maxEnrolledFactors, mfa.maxVerifiedFactors])
      .toStrictEqual([300, 300, 10, 10])
    expect([mfa.phone.otpLength, seconds(mfa.phone.maxFrequency), mfa.phone.template]).toStrictEqual([6, 60, "Your code is {{ .Code }}"])
    expect([passkey.enabled, passkey.maxPerUser, seconds(passkey.challengeExpiry)]).toStrictEqual([false, 10, 300])
  })

  it("raises lifetimes under five minutes to five minutes and a phone code length outside 6..10 to 6, as GoTrue", () => {
    const { mfa } = config(embedded({
      AUTH_MFA_CHALLENGE_EXPIRY_DURATION: "30", AUTH_MFA_FACTOR_EXPIRY_DURATION: "1m", AUTH_MFA_PHONE_OTP_LENGTH: "12"
    }))
    expect([seconds(mfa.challengeExpiry), seconds(mfa.factorExpiry), mfa.phone.otpLength]).toStrictEqual([300, 300, 6])
    expect(config(embedded({ AUTH_MFA_PHONE_OTP_LENGTH: "8" })).mfa.phone.otpLength).toBe(8)
  })

  it("takes the relying party from SITE_URL in the embedded default, and lists it when a WebAuthn feature is on", () => {
    const parsed = embedded({ AUTH_SITE_URL: "http://localhost:3000", AUTH_PASSKEY_ENABLED: "true" })
    expect(config(parsed).webauthn).toStrictEqual({ rpId: "localhost", rpDisplayName: "localhost", rpOrigins: ["http://localhost:3000"] })
    const defaulted = Either.getOrThrow(parsed).defaulted
    expect(defaulted).toContain("AUTH_WEBAUTHN_RP_ID=localhost")
    expect(defaulted).toContain("AUTH_WEBAUTHN_RP_ORIGINS=http://localhost:3000")
  })

  it("refuses a production start with passkeys or WebAuthn factors on and no relying party", () => {
    expect(variables(parseAppConfig({ ...productionEnv, AUTH_PASSKEY_ENABLED: "true" }))).toStrictEqual(
      ["AUTH_WEBAUTHN_RP_ID", "AUTH_WEBAUTHN_RP_ORIGINS"]
    )
    expect(variables(parseAppConfig({ ...productionEnv, AUTH_MFA_WEB_AUTHN_VERIFY_ENABLED: "true" }))).toStrictEqual(
      ["AUTH_WEBAUTHN_RP_ID", "AUTH_WEBAUTHN_RP_ORIGINS"]
    )
    const ready = config(parseAppConfig({
      ...productionEnv, AUTH_PASSKEY_ENABLED: "true", AUTH_WEBAUTHN_RP_ID: "example.com",
      AUTH_WEBAUTHN_RP_ORIGINS: "https://example.com/,https://app.example.com"
    }))
    expect(ready.webauthn.rpOrigins).toStrictEqual(["https://example.com", "https://app.example.com"])
    // Off, nothing is required.
    expect(config(parseAppConfig(productionEnv)).passkey.enabled).toBe(false)
  })

  it("refuses an origin that is not one", () => {
    expect(variables(embedded({ AUTH_WEBAUTHN_RP_ORIGINS: "https://example.com/path" }))).toStrictEqual(["AUTH_WEBAUTHN_RP_ORIGINS"])
  })
})

describe("Web3 sign-in", () => {
  it("is off for both chains by default, with GoTrue's ten-minute validity", () => {
    const { web3 } = config(embedded({}))
    expect(web3).toStrictEqual({
      ethereum: { enabled: false, maximumValidityDuration: Duration.minutes(10) },
      solana: { enabled: false, maximumValidityDuration: Duration.minutes(10) }
    })
  })

  it("reads each chain's switch and Go-duration validity under both prefixes", () => {
    const { web3 } = config(embedded({
      GOTRUE_EXTERNAL_WEB3_ETHEREUM_ENABLED: "true",
      AUTH_EXTERNAL_WEB3_SOLANA_ENABLED: "1",
      AUTH_EXTERNAL_WEB3_ETHEREUM_MAXIMUM_VALIDITY_DURATION: "5m",
      GOTRUE_EXTERNAL_WEB3_SOLANA_MAXIMUM_VALIDITY_DURATION: "1h30m"
    }))
    expect(web3.ethereum).toStrictEqual({ enabled: true, maximumValidityDuration: Duration.minutes(5) })
    expect(web3.solana).toStrictEqual({ enabled: true, maximumValidityDuration: Duration.minutes(90) })
    expect(issues(embedded({ AUTH_EXTERNAL_WEB3_SOLANA_MAXIMUM_VALIDITY_DURATION: "ten minutes" })).map((i) => i.variable))
      .toStrictEqual(["AUTH_EXTERNAL_WEB3_SOLANA_MAXIMUM_VALIDITY_DURATION"])
  })
})

describe("message locales (MAILER_LOCALES, MAILER_DEFAULT_LOCALE, the *_<LOCALE> settings)", () => {
  it("offers the listed built-in locales, any case, once each; the un-suffixed settings are the default's, under its own", () => {
    const c = config(embedded({
      AUTH_MAILER_LOCALES: " DE, en ,de,pt",
      AUTH_MAILER_DEFAULT_LOCALE: "de",
      AUTH_MAILER_SUBJECTS_RECOVERY: "Default-locale recovery",
      AUTH_MAILER_SUBJECTS_INVITE: "Default-locale invite",
      AUTH_MAILER_SUBJECTS_INVITE_DE: "Einladung",
      AUTH_MAILER_TEMPLATES_CONFIRMATION_PT: "https://example.com/pt/confirmation.html",
      AUTH_SMS_TEMPLATE: "Default {{ .Code }}",
      AUTH_SMS_TEMPLATE_EN: "English {{ .Code }}"
    }))
    const { byLocale, offer } = c.mailer.localization
    expect(offer).toStrictEqual({ offered: ["de", "en", "pt"], fallback: "de" })
    expect(byLocale.get("de")).toStrictEqual({
      subjects: { invite: "Einladung", recovery: "Default-locale recovery" },
      templates: {},
      smsTemplate: Option.some("Default {{ .Code }}")
    })
    expect(byLocale.get("en")).toStrictEqual({ subjects: {}, templates: {}, smsTemplate: Option.some("English {{ .Code }}") })
    expect(byLocale.get("pt")).toStrictEqual({
      subjects: {},
      templates: { confirmation: "https://example.com/pt/confirmation.html" },
      smsTemplate: Option.none()
    })
    expect(byLocale.has("fr")).toBe(false)
  })

  it("refuses a locale that is not built in, a default that is not offered, and a template that is not a URL", () => {
    expect(variables(embedded({ AUTH_MAILER_LOCALES: "en,it" }))).toStrictEqual(["AUTH_MAILER_LOCALES"])
    expect(variables(embedded({ AUTH_MAILER_LOCALES: "en,de", AUTH_MAILER_DEFAULT_LOCALE: "fr" }))).toStrictEqual(["AUTH_MAILER_DEFAULT_LOCALE"])
    expect(variables(embedded({ AUTH_MAILER_DEFAULT_LOCALE: "klingon" }))).toStrictEqual(["AUTH_MAILER_DEFAULT_LOCALE"])
    expect(variables(embedded({ AUTH_MAILER_LOCALES: "en,de", AUTH_MAILER_TEMPLATES_RECOVERY_DE: "not a url" })))
      .toStrictEqual(["AUTH_MAILER_TEMPLATES_RECOVERY_DE"])
  })

  it("names settings set without their prefix, which are not read, unless a prefixed spelling is set too or the bare name is read", () => {
    const warned = (env: Record<string, string>) => Either.getOrThrow(embedded(env)).warnings.filter((w) => w.includes("without a prefix"))
    expect(warned({ ADMIN_CONSOLE_ENABLED: "true", MAILER_LINK_CONFIRM_PAGE: "true" })).toStrictEqual([
      "set without a prefix, so not read: ADMIN_CONSOLE_ENABLED, MAILER_LINK_CONFIRM_PAGE (write AUTH_ADMIN_CONSOLE_ENABLED, AUTH_MAILER_LINK_CONFIRM_PAGE)"
    ])
    expect(Either.getOrThrow(embedded({ ADMIN_CONSOLE_ENABLED: "true" })).config.adminConsole.enabled).toBe(false)
    expect(warned({ ADMIN_CONSOLE_ENABLED: "true", GOTRUE_ADMIN_CONSOLE_ENABLED: "true" })).toStrictEqual([])
    expect(warned({ LOG_LEVEL: "warn", NOT_A_SETTING: "x" })).toStrictEqual([])
  })

  it("reads a locale's settings only when it is offered: otherwise start-up names them as unread", () => {
    const result = embedded({ AUTH_MAILER_SUBJECTS_RECOVERY_DE: "Passwort" })
    expect(Either.getOrThrow(result).warnings).toContainEqual(expect.stringContaining("AUTH_MAILER_SUBJECTS_RECOVERY_DE"))
    const offered = embedded({ AUTH_MAILER_LOCALES: "en,de", AUTH_MAILER_SUBJECTS_RECOVERY_DE: "Passwort" })
    expect(Either.getOrThrow(offered).warnings.join("\n")).not.toContain("AUTH_MAILER_SUBJECTS_RECOVERY_DE")
  })
})
