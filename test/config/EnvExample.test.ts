import { readdirSync, readFileSync } from "node:fs"
import { parseEnv } from "node:util"
import { describe, expect, it } from "@effect/vitest"
import { Either, Redacted } from "effect"
import { formatConfigIssues, type ParseOptions, parseAppConfig } from "../../src/config/AppConfig.js"
import { OAUTH_PROVIDER_SPECS, OAUTH_PROVIDERS } from "../../src/auth/oauth/OAuthProviders.js"
import { MESSAGE_LOCALES } from "../../src/domain/MessageLocale.js"

// .env.example and the parser must not drift: every variable documented is one the parser reads, and
// every variable the parser reads is documented.

const example = readFileSync(new URL("../../.env.example", import.meta.url), "utf8")
const lines = example.split("\n")
/** Every config source, the platform's, auth's and IAM's readers among them. */
const CONFIG = new URL("../../src/config/", import.meta.url)
const source = readdirSync(CONFIG).filter((name) => name.endsWith(".ts")).map((name) => readFileSync(new URL(name, CONFIG), "utf8")).join("\n")

/** The parser as the server runs it: reading the EXTERNAL_<NAME>_* variables of the auth registry's providers. */
const parsed = (env: Readonly<Record<string, string | undefined>>, options: ParseOptions = {}) =>
  parseAppConfig(env, { ...options, oauthProviders: OAUTH_PROVIDER_SPECS })

const ASSIGNMENT = /^# ([A-Z][A-Z0-9_]*)=(.*)$/
const PATTERN = /^# AUTH_EXTERNAL_<PROVIDER>_([A-Z_]+)=/

/** Documented variable names, as spelled in the file (AUTH_X, or an unprefixed name). */
const documented = lines.flatMap((line) => {
  const match = ASSIGNMENT.exec(line)
  return match === null ? [] : [match[1]!]
})
const providerSuffixes = lines.flatMap((line) => {
  const match = PATTERN.exec(line)
  return match === null ? [] : [match[1]!]
})

/** The names listed on the indented comment lines that follow the line matching `marker`. */
const listAfter = (marker: RegExp): ReadonlyArray<string> => {
  const start = lines.findIndex((line) => marker.test(line))
  expect(start, `a line matching ${marker} in .env.example`).toBeGreaterThanOrEqual(0)
  const names: Array<string> = []
  for (const line of lines.slice(start + 1)) {
    if (!line.startsWith("#   ")) break
    names.push(...line.slice(1).split(/[\s,]+/).filter((word) => word !== ""))
  }
  return names
}
/**
 * The per-locale settings, documented once as a pattern (`# AUTH_MAILER_SUBJECTS_<KIND>_<LOCALE>=`): a key is one of
 * them when it is a documented setting of the pattern's form followed by a built-in locale's suffix.
 */
const localizedPatterns = lines.flatMap((line) => {
  const match = /^# AUTH_([A-Z_<>]+)_<LOCALE>=/.exec(line)
  return match === null ? [] : [new RegExp(`^(${match[1]!.replace("<KIND>", "[A-Z_]+")})_(${MESSAGE_LOCALES.map((l) => l.toUpperCase()).join("|")})$`)]
})
const isLocalized = (key: string): boolean =>
  localizedPatterns.some((pattern) => {
    const base = pattern.exec(key)?.[1]
    return base !== undefined && documented.includes(`AUTH_${base}`)
  })
const documentedProviders = listAfter(/<PROVIDER> is one of:$/)
const documentedUnprefixed = listAfter(/Also read without any prefix:$/)

/**
 * What the parser actually reads: it runs over environments that record every name looked
 * up. A lookup tries AUTH_X, then GOTRUE_X, then X's unprefixed names, so an unprefixed read belongs to
 * the AUTH_ read before it.
 */
const traceParser = () => {
  const keys = new Set<string>()
  const aliases = new Map<string, Set<string>>()
  const trace = (env: Record<string, string>, embedded: boolean) => {
    const reads: Array<string> = []
    const proxy = new Proxy(env, {
      get: (target, name) => {
        if (typeof name === "string") reads.push(name)
        return typeof name === "string" ? target[name] : undefined
      }
    })
    parsed(proxy, embedded ? { embeddedJwtSecret: Redacted.make("generated") } : {})
    let current = ""
    for (const name of reads) {
      if (name.startsWith("AUTH_")) {
        current = name.slice("AUTH_".length)
        keys.add(current)
      } else if (name.startsWith("GOTRUE_")) {
        expect(name.slice("GOTRUE_".length)).toBe(current)
      } else {
        expect(current, `${name} read before any AUTH_ spelling`).not.toBe("")
        aliases.set(current, new Set([...(aliases.get(current) ?? []), name]))
      }
    }
  }
  const allProviders = Object.fromEntries(OAUTH_PROVIDERS.map((p) => [`AUTH_EXTERNAL_${p.toUpperCase()}_ENABLED`, "true"]))
  trace({}, true)
  trace({}, false)
  trace({ ...allProviders }, true)
  for (const provider of ["twilio", "messagebird", "textlocal", "vonage"]) {
    trace({ DATABASE_URL: "postgres://db/auth", AUTH_EXTERNAL_PHONE_ENABLED: "true", AUTH_SMS_PROVIDER: provider }, false)
  }
  trace({ AUTH_SECURITY_CAPTCHA_ENABLED: "true", AUTH_JWT_VALID_METHODS: "none" }, true)
  return { keys, aliases, unprefixed: new Set([...aliases.values()].flatMap((names) => [...names])) }
}
const parser = traceParser()

const providerVariables = new Set(
  documentedProviders.flatMap((provider) => providerSuffixes.map((suffix) => `EXTERNAL_${provider}_${suffix}`))
)

/** Whether the setting `key` (no prefix) is documented under one of its spellings. */
const isDocumented = (key: string): boolean =>
  documented.includes(`AUTH_${key}`) ||
  [...(parser.aliases.get(key) ?? [])].some((alias) => documented.includes(alias)) ||
  providerVariables.has(key) ||
  isLocalized(key)

describe(".env.example", () => {
  it("sets nothing: a fresh clone starts without any configuration", () => {
    const active = lines.filter((line) => line.trim() !== "" && !line.startsWith("#"))
    expect(active).toStrictEqual([])
  })

  it("documents each variable once", () => {
    expect(documented.length).toBeGreaterThan(80)
    expect(documented.filter((name, i) => documented.indexOf(name) !== i)).toStrictEqual([])
  })

  it("documents only variables the parser reads", () => {
    const unknown = documented.filter((name) =>
      name.startsWith("AUTH_") ? !parser.keys.has(name.slice("AUTH_".length)) : !parser.unprefixed.has(name)
    )
    expect(unknown).toStrictEqual([])
  })

  it("documents every variable the parser reads", () => {
    const undocumented = [...parser.keys].filter((key) => !isDocumented(key)).map((key) => `AUTH_${key}`)
    expect(undocumented).toStrictEqual([])
  })

  it("documents every key named in src/config (static scan)", () => {
    const literal = [...source.matchAll(
      /(?:\.(?:string|requiredString|secret|boolean|integer|duration|oneOf|url|list|parse|lookup)|devDefault|spelledAs)\(\s*"([A-Z][A-Z0-9_]*)"/g
    )].map((match) => match[1]!)
    expect(literal.length).toBeGreaterThan(80)
    expect(literal.filter((key) => !isDocumented(key))).toStrictEqual([])

    const templated = [...source.matchAll(/`\$\{key\}_([A-Z_]+)`/g)].map((match) => match[1]!)
    expect(new Set(templated)).toStrictEqual(new Set(providerSuffixes))

    const unprefixed = [...source.matchAll(/unprefixed: \[([^\]]*)\]/g)]
      .flatMap((match) => [...match[1]!.matchAll(/"([A-Z0-9_]+)"/g)].map((name) => name[1]!))
    expect(new Set(unprefixed)).toStrictEqual(new Set(documentedUnprefixed))
  })

  it("lists exactly the OAuth providers the parser knows, each with every variable it reads", () => {
    expect([...documentedProviders].sort()).toStrictEqual(OAUTH_PROVIDERS.map((p) => p.toUpperCase()).sort())
    const read = [...parser.keys].filter((key) => key.startsWith("EXTERNAL_") && !providerVariables.has(key))
    expect(read.sort()).toStrictEqual(
      [
        "EXTERNAL_ANONYMOUS_USERS_ENABLED", "EXTERNAL_EMAIL_ENABLED", "EXTERNAL_EMAIL_MAGIC_LINK_ENABLED", "EXTERNAL_PHONE_ENABLED",
        "EXTERNAL_WEB3_ETHEREUM_ENABLED", "EXTERNAL_WEB3_ETHEREUM_MAXIMUM_VALIDITY_DURATION", "EXTERNAL_WEB3_SOLANA_ENABLED",
        "EXTERNAL_WEB3_SOLANA_MAXIMUM_VALIDITY_DURATION"
      ]
    )
    for (const variable of providerVariables) expect(parser.keys, variable).toContain(variable)
  })

  it("names exactly the unprefixed spellings the parser accepts", () => {
    expect(new Set(documentedUnprefixed)).toStrictEqual(parser.unprefixed)
  })

  it("rejects junk in every typed variable it documents, so the name reaches the parser", () => {
    // A string setting accepts anything; a typed one must report its own spelling.
    const rejected = documented.filter((name) =>
      Either.match(parsed({ [name]: "%%%" }, { embeddedJwtSecret: Redacted.make("generated") }), {
        onLeft: (issues) => issues.some((issue) => issue.variable === name || issue.variable.startsWith(`${name} `)),
        onRight: () => false
      })
    )
    for (const name of ["AUTH_JWT_EXP", "PORT", "LOG_LEVEL", "DATABASE_URL", "AUTH_SITE_URL", "AUTH_DB_NAMESPACE",
      "AUTH_JWT_KEYS", "AUTH_SMTP_MAX_FREQUENCY", "AUTH_DISABLE_SIGNUP", "AUTH_EXTERNAL_GITHUB_REDIRECT_URI"]) {
      expect(rejected).toContain(name)
    }
    expect(rejected.length).toBeGreaterThan(40)
  })

  it("has example values the parser accepts, read the way a .env file is read", () => {
    const uncommented = lines.filter((line) => ASSIGNMENT.test(line)).map((line) => line.slice(2)).join("\n")
    const env = parseEnv(uncommented) as Record<string, string>
    expect(Object.keys(env).sort()).toStrictEqual([...documented].sort())
    const result = parsed(env)
    if (Either.isLeft(result)) expect.fail(formatConfigIssues(result.left))
    const { config } = Either.getOrThrow(result)
    expect(config.mode).toBe("postgres")
    expect(config.password.requiredCharacters).toHaveLength(4)
    expect(config.password.requiredCharacters[3]).toContain(":")
    expect(config.password.requiredCharacters[3]).toContain("#")
    expect(config.external["github"]?.enabled).toBe(true)
  })
})
