import { describe, expect, it } from "@effect/vitest"
import { Duration, FastCheck, Option } from "effect"
import { parseDurationSetting, parseGoDuration, parseGoDurationNanos } from "../../src/domain/GoDuration.js"

const NS = 1n
const US = 1_000n * NS
const MS = 1_000n * US
const S = 1_000n * MS
const M = 60n * S
const H = 60n * M
const INT64_MAX = 2n ** 63n - 1n

const nanosOf = (parsed: Option.Option<Duration.Duration>): Option.Option<bigint> =>
  Option.map(parsed, Duration.unsafeToNanos)

// Go's own table (src/time/time_test.go, parseDurationTests): these must mean exactly what they mean to GoTrue.
const goValid: ReadonlyArray<readonly [string, bigint]> = [
  ["0", 0n],
  ["5s", 5n * S],
  ["30s", 30n * S],
  ["1478s", 1478n * S],
  ["-5s", -5n * S],
  ["+5s", 5n * S],
  ["-0", 0n],
  ["+0", 0n],
  ["5.0s", 5n * S],
  ["5.6s", 5n * S + 600n * MS],
  ["5.s", 5n * S],
  [".5s", 500n * MS],
  ["1.0s", S],
  ["1.00s", S],
  ["1.004s", S + 4n * MS],
  ["1.0040s", S + 4n * MS],
  ["100.00100s", 100n * S + MS],
  ["10ns", 10n * NS],
  ["11us", 11n * US],
  ["12µs", 12n * US], // U+00B5 MICRO SIGN
  ["12μs", 12n * US], // U+03BC GREEK SMALL LETTER MU
  ["13ms", 13n * MS],
  ["14s", 14n * S],
  ["15m", 15n * M],
  ["16h", 16n * H],
  ["3h30m", 3n * H + 30n * M],
  ["10.5s4m", 4n * M + 10n * S + 500n * MS],
  ["-2m3.4s", -(2n * M + 3n * S + 400n * MS)],
  ["1h2m3s4ms5us6ns", H + 2n * M + 3n * S + 4n * MS + 5n * US + 6n * NS],
  ["39h9m14.425s", 39n * H + 9n * M + 14n * S + 425n * MS],
  ["52763797000ns", 52763797000n],
  ["0.3333333333333333333h", 20n * M],
  ["9007199254740993ns", 2n ** 53n + 1n],
  ["9223372036854775807ns", INT64_MAX],
  ["9223372036854775.807us", INT64_MAX],
  ["9223372036s854ms775us807ns", INT64_MAX],
  ["-9223372036854775808ns", -(INT64_MAX + 1n)],
  ["-9223372036854775.808us", -(INT64_MAX + 1n)],
  ["-9223372036s854ms775us808ns", -(INT64_MAX + 1n)],
  ["0.100000000000000000000h", 6n * M],
  ["0.830103483285477580700h", 49n * M + 48n * S + 372539827n * NS]
]

const goInvalid: ReadonlyArray<string> = [
  "",
  "3",
  "-",
  "s",
  ".",
  "-.",
  ".s",
  "+.s",
  "1d",
  "\x85\x85",
  "\xffff",
  "hello \xffff world",
  "\uFFFD",
  "\uFFFD hello \uFFFD world",
  "9223372036854775808ns",
  "9223372036854775.808us",
  "9223372036854ms775us808ns",
  "-9223372036854775809ns"
]

describe("parseGoDurationNanos", () => {
  it.each(goValid)("%s is Go's value", (input, nanos) => {
    expect(parseGoDurationNanos(input)).toStrictEqual(Option.some(nanos))
  })

  it.each(goInvalid)("%j is not a Go duration", (input) => {
    expect(parseGoDurationNanos(input)).toStrictEqual(Option.none())
  })
})

describe("parseGoDuration", () => {
  it.each([
    ["300ms", 300n * MS],
    ["2h45m", 2n * H + 45n * M],
    ["1h30m", H + 30n * M],
    ["0", 0n],
    ["1.5µs", 1500n * NS],
    ["1.5h", H + 30n * M]
  ] as const)("%s", (input, nanos) => {
    expect(nanosOf(parseGoDuration(input))).toStrictEqual(Option.some(nanos))
  })

  it("rejects negative durations, which a setting cannot mean", () => {
    expect(parseGoDuration("-1.5h")).toStrictEqual(Option.none())
    expect(parseGoDurationNanos("-1.5h")).toStrictEqual(Option.some(-(H + 30n * M)))
  })

  it.each(["10", "", "1x", "h", ".s", " 1h", "1h ", "1h 30m", "0.0", "00", "1e3s", "1,5s"])(
    "rejects %j",
    (input) => {
      expect(parseGoDuration(input)).toStrictEqual(Option.none())
    }
  )

  const part = FastCheck.nat({ max: 1_000_000 })
  it.prop(
    "XhYmZsWms parses to the exact total",
    { h: part, m: part, s: part, ms: part },
    ({ h, m, ms, s }) => {
      const expected = BigInt(h) * H + BigInt(m) * M + BigInt(s) * S + BigInt(ms) * MS
      expect(nanosOf(parseGoDuration(`${h}h${m}m${s}s${ms}ms`))).toStrictEqual(Option.some(expected))
    }
  )

  const UNITS = { h: H, m: M, s: S, ms: MS, us: US, ns: NS } as const
  const unitName = FastCheck.constantFrom(...(Object.keys(UNITS) as Array<keyof typeof UNITS>))
  it.prop(
    "any units, repeated and in any order, add up",
    { parts: FastCheck.array(FastCheck.tuple(FastCheck.nat({ max: 10_000 }), unitName), { minLength: 1, maxLength: 6 }) },
    ({ parts }) => {
      const expected = parts.reduce((sum, [n, u]) => sum + BigInt(n) * UNITS[u], 0n)
      expect(parseGoDurationNanos(parts.map(([n, u]) => `${n}${u}`).join(""))).toStrictEqual(Option.some(expected))
    }
  )
})

describe("parseDurationSetting", () => {
  it("reads a bare number as seconds, as GoTrue documents these settings", () => {
    expect(nanosOf(parseDurationSetting("10"))).toStrictEqual(Option.some(10n * S))
    expect(nanosOf(parseDurationSetting("90"))).toStrictEqual(Option.some(90n * S))
    expect(nanosOf(parseDurationSetting("1.5"))).toStrictEqual(Option.some(1500n * MS))
    expect(nanosOf(parseDurationSetting(" 60 "))).toStrictEqual(Option.some(60n * S))
  })

  it("reads a Go duration as a Go duration", () => {
    expect(nanosOf(parseDurationSetting("10s"))).toStrictEqual(Option.some(10n * S))
    expect(nanosOf(parseDurationSetting("1h30m"))).toStrictEqual(Option.some(H + 30n * M))
  })

  it.each(["", "-10", "-1s", "1x", "ten", "10 s"])("rejects %j", (input) => {
    expect(parseDurationSetting(input)).toStrictEqual(Option.none())
  })

  it.prop("a bare integer n is n seconds", { n: FastCheck.nat({ max: 10_000_000 }) }, ({ n }) => {
    expect(nanosOf(parseDurationSetting(String(n)))).toStrictEqual(Option.some(BigInt(n) * S))
    expect(Option.map(parseDurationSetting(String(n)), Duration.toSeconds)).toStrictEqual(Option.some(n))
  })
})
