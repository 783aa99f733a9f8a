import * as Duration from "effect/Duration"
import * as Option from "effect/Option"

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

// Go's Duration is an int64 of nanoseconds; anything beyond it is an "invalid duration" there, and must be
// here too (a ban_duration of 10^13 hours would otherwise become an unrepresentable Date).
const MAX_NANOS = 2n ** 63n - 1n

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
    if (fracPart !== "") total += fractionNanos(fracPart, scale)
    rest = rest.slice(whole.length)
  }
  if (total > (sign < 0n ? MAX_NANOS + 1n : MAX_NANOS)) return Option.none()
  return Option.some(sign * total)
}

/**
 * Go's leadingFraction and its float64 step, reproduced exactly: digits stop counting once they would
 * overflow an int64, and the fraction of the unit is computed in float64 and truncated, so values such as
 * "0.3333333333333333333h" give Go's 20m rather than 1ns less.
 */
const fractionNanos = (digits: string, unitNanos: bigint): bigint => {
  let x = 0n
  let scale = 1
  for (const digit of digits) {
    if (x > MAX_NANOS / 10n) break
    const next = x * 10n + BigInt(digit)
    if (next > MAX_NANOS + 1n) break
    x = next
    scale *= 10
  }
  return BigInt(Math.trunc(Number(x) * (Number(unitNanos) / scale)))
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
