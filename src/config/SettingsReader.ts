import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { parseDurationSetting } from "../domain/GoDuration.js"

/** One broken setting: the variable name as the operator would write it, and the rule it broke. */
export interface ConfigIssue {
  readonly variable: string
  readonly rule: string
}

/** How a setting may be spelled in the environment, most specific first. */
export interface Names {
  /** Also read without any prefix (the spec allows this for PORT, DATABASE_URL, LOG_LEVEL, …). */
  readonly unprefixed?: ReadonlyArray<string>
}

// GoTrue deployments set GOTRUE_*; the spec says AUTH_*. Both are read so an existing deployment can switch
// by swapping the binary; AUTH_ wins when both are set.
const PREFIXES = ["AUTH_", "GOTRUE_"] as const

const BOOLEAN_TRUE = new Set(["1", "t", "true", "y", "yes", "on"])
const BOOLEAN_FALSE = new Set(["0", "f", "false", "n", "no", "off"])

/**
 * Reads typed settings out of a flat string map and collects every problem instead of stopping at the first,
 * so an operator sees all broken variables in one message. Values are never copied into a rule text: a
 * secret pasted into the wrong variable must not end up in a log.
 */
export class SettingsReader {
  readonly issues: Array<ConfigIssue> = []

  /** Every key some reader asked for, set or not: what the configuration knows. */
  private readonly asked = new Set<string>()

  /** The bare names some reader accepts (PORT, DATABASE_URL, …). */
  private readonly bare = new Set<string>()

  constructor(private readonly env: Readonly<Record<string, string | undefined>>) {}

  /** The first spelling of `key` that is set (to a non-empty value), with its value. */
  lookup(key: string, names: Names = {}): Option.Option<{ readonly variable: string; readonly value: string }> {
    this.asked.add(key)
    for (const name of names.unprefixed ?? []) this.bare.add(name)
    for (const variable of this.spellings(key, names)) {
      const value = this.env[variable]
      if (value !== undefined && value.trim() !== "") return Option.some({ variable, value: value.trim() })
    }
    return Option.none()
  }

  /** The canonical spelling used in messages when a setting is missing. */
  canonical(key: string): string {
    return `${PREFIXES[0]}${key}`
  }

  /** The spelling an issue names: the one the operator actually set (GOTRUE_SITE_URL, AUTH_DB_DATABASE_URL, …). */
  spelledAs(key: string, names?: Names): string {
    return Option.match(this.lookup(key, names), { onNone: () => this.canonical(key), onSome: (found) => found.variable })
  }

  fail(variable: string, rule: string): void {
    this.issues.push({ variable, rule })
  }

  string(key: string, names?: Names): Option.Option<string> {
    return Option.map(this.lookup(key, names), (found) => found.value)
  }

  requiredString(key: string, names?: Names): string {
    const found = this.lookup(key, names)
    if (Option.isNone(found)) {
      this.fail(this.describeMissing(key, names), "is required")
      return ""
    }
    return found.value.value
  }

  secret(key: string, names?: Names): Option.Option<Redacted.Redacted<string>> {
    return Option.map(this.string(key, names), Redacted.make)
  }

  boolean(key: string, fallback: boolean, names?: Names): boolean {
    return this.parse(key, names, fallback, "must be a boolean (true/false, 1/0)", (raw) => {
      const lower = raw.toLowerCase()
      return BOOLEAN_TRUE.has(lower) ? Option.some(true) : BOOLEAN_FALSE.has(lower) ? Option.some(false) : Option.none()
    })
  }

  integer(key: string, fallback: number, bounds: { min?: number; max?: number } = {}, names?: Names): number {
    const { max = Number.MAX_SAFE_INTEGER, min = 0 } = bounds
    return this.parse(key, names, fallback, `must be a whole number from ${min} to ${max}`, (raw) => {
      if (!/^-?\d+$/.test(raw)) return Option.none()
      const n = Number(raw)
      return n >= min && n <= max ? Option.some(n) : Option.none()
    })
  }

  duration(key: string, fallback: Duration.Duration, names?: Names): Duration.Duration {
    return this.parse(
      key,
      names,
      fallback,
      "must be a duration: a number of seconds or a Go duration such as 10s, 1h30m",
      parseDurationSetting
    )
  }

  oneOf<const A extends string>(key: string, allowed: ReadonlyArray<A>, fallback: A, names?: Names): A {
    return this.parse(key, names, fallback, `must be one of: ${allowed.join(", ")}`, (raw) => {
      const lower = raw.toLowerCase()
      return Option.fromNullable(allowed.find((a) => a === lower))
    })
  }

  url(key: string, names?: Names): Option.Option<string> {
    const found = this.lookup(key, names)
    if (Option.isNone(found)) return Option.none()
    if (!isAbsoluteUrl(found.value.value)) {
      this.fail(found.value.variable, "must be an absolute http(s) URL")
      return Option.none()
    }
    return Option.some(found.value.value)
  }

  /** A comma-separated list; blanks are dropped. */
  list(key: string, fallback: ReadonlyArray<string>, names?: Names): ReadonlyArray<string> {
    return Option.match(this.string(key, names), {
      onNone: () => fallback,
      onSome: (raw) => raw.split(",").map((s) => s.trim()).filter((s) => s !== "")
    })
  }

  parse<A>(
    key: string,
    names: Names | undefined,
    fallback: A,
    rule: string,
    decode: (raw: string) => Option.Option<A>
  ): A {
    const found = this.lookup(key, names)
    if (Option.isNone(found)) return fallback
    const decoded = decode(found.value.value)
    if (Option.isNone(decoded)) {
      this.fail(found.value.variable, rule)
      return fallback
    }
    return decoded.value
  }

  /**
   * The AUTH_ and GOTRUE_ variables that are set but that no reader asked for, sorted: a GoTrue setting Gatehouse does
   * not have, or a misspelt one. Call it after every setting was read.
   */
  unread(): ReadonlyArray<string> {
    return Object.keys(this.env).filter((variable) => {
      const prefix = PREFIXES.find((candidate) => variable.startsWith(candidate))
      return prefix !== undefined && (this.env[variable] ?? "").trim() !== "" && !this.asked.has(variable.slice(prefix.length))
    }).sort()
  }

  /**
   * Settings set without their prefix (`MAILER_AUTOCONFIRM=true`), which are not read: the bare names of keys some
   * reader asked for, unless that reader also takes the bare name or a prefixed spelling is set too. Sorted. Call it
   * after every setting was read.
   */
  unprefixed(): ReadonlyArray<string> {
    // From the environment's names, not a read of every key: nothing is looked up that is not there.
    const set = (variable: string) => (this.env[variable] ?? "").trim() !== ""
    return Object.keys(this.env).filter((variable) =>
      this.asked.has(variable) && !this.bare.has(variable) && set(variable) && !PREFIXES.some((prefix) => set(`${prefix}${variable}`))
    ).sort()
  }

  private spellings(key: string, names: Names): ReadonlyArray<string> {
    return [...PREFIXES.map((prefix) => `${prefix}${key}`), ...(names.unprefixed ?? [])]
  }

  private describeMissing(key: string, names: Names | undefined): string {
    const unprefixed = names?.unprefixed ?? []
    return unprefixed.length > 0 ? `${unprefixed[0]} (or ${this.canonical(key)})` : this.canonical(key)
  }
}

export const isAbsoluteUrl = (raw: string): boolean => {
  try {
    const url = new URL(raw)
    return (url.protocol === "http:" || url.protocol === "https:") && url.host !== ""
  } catch {
    return false
  }
}
