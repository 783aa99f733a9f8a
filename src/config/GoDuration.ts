import { Duration, Option } from "effect"

// Go's time.ParseDuration grammar: an optional sign, then one or more decimal numbers each with a unit
// ("300ms", "1.5h", "2h45m"). GoTrue reads every duration setting this way, and admin ban_duration too,
// so existing deployments' values must keep meaning the same thing.
const UNIT_NANOS: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  "µs": 1_000n,
  "μs": 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n
}

const PART = /^(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)/

/** Nanoseconds for a Go duration string, or None when it is not one. Negative durations are allowed. */
export const parseGoDurationNanos = (input: string): Option.Option<bigint> => {
  let rest = input
  let sign = 1n
  if (rest.startsWith("-") || rest.startsWith("+")) {
    sign = rest.startsWith("-") ? -1n : 1n
    rest = rest.slice(1)
  }
  if (rest === "0") return Option.some(0n)
  if (rest === "") return Option.none()
  let total = 0n
  while (rest !== "") {
    const match = PART.exec(rest)
    if (match === null) return Option.none()
    const [whole, intPart = "", fracPart = "", unit = ""] = match
    if (intPart === "" && fracPart === "") return Option.none()
    const scale = UNIT_NANOS[unit]!
    total += BigInt(intPart || "0") * scale
    if (fracPart !== "") {
      // Exact fraction of the unit, truncated toward zero like Go.
      total += (BigInt(fracPart) * scale) / 10n ** BigInt(fracPart.length)
    }
    rest = rest.slice(whole.length)
  }
  return Option.some(sign * total)
}

/** A Go duration string as an Effect Duration; None for malformed or negative input. */
export const parseGoDuration = (input: string): Option.Option<Duration.Duration> =>
  parseGoDurationNanos(input).pipe(
    Option.filter((nanos) => nanos >= 0n),
    Option.map(Duration.nanos)
  )

/**
 * A duration setting: a Go duration string, or a bare non-negative number meaning seconds
 * (GoTrue documents several of these settings "in seconds" and deployments set them that way).
 */
export const parseDurationSetting = (input: string): Option.Option<Duration.Duration> => {
  const trimmed = input.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Option.some(Duration.millis(Math.round(Number(trimmed) * 1000)))
  return parseGoDuration(trimmed)
}
