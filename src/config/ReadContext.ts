import * as Option from "effect/Option"
import type { Names, SettingsReader } from "./SettingsReader.js"

/**
 * What the readers of one configuration share beside the SettingsReader that collects their issues: the mode, and
 * the two lists start-up reports with the config. Production (a DATABASE_URL is set) enforces every setting the spec
 * marks required; the embedded default fills development values instead and lists each one in `defaulted`.
 */
export class ReadContext {
  /** What start-up filled in because the operator left it unset: shown in the banner, never secret values. */
  readonly defaulted: Array<string> = []
  /**
   * Settings that start but will fail later, as GoTrue's do (phone sign-in with no SMS provider, a provider with
   * empty credentials): logged once at start-up, never secret values.
   */
  readonly warnings: Array<string> = []

  constructor(private readonly r: SettingsReader, readonly production: boolean) {}

  /** Required in production; in the embedded default `value` when unset, and listed. */
  devDefault(key: string, value: string, names?: Names): string {
    if (this.production) return this.r.requiredString(key, names)
    const found = this.r.string(key, names)
    if (Option.isSome(found)) return found.value
    this.defaulted.push(`${names?.unprefixed?.[0] ?? this.r.canonical(key)}=${value}`)
    return value
  }
}
