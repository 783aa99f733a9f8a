import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { jsonDepthExceeds, MAX_JSON_DEPTH } from "../../src/platform/http/JsonDepth.js"

/** The nesting depth of a parsed value, the slow recursive way, as the oracle. */
const depthOf = (value: unknown): number =>
  Array.isArray(value)
    ? 1 + Math.max(0, ...value.map(depthOf))
    : typeof value === "object" && value !== null
    ? 1 + Math.max(0, ...Object.values(value).map(depthOf))
    : 0

/** Strings full of what could fool a scanner: brackets, quotes and backslashes. */
const tricky = FastCheck.stringOf(FastCheck.constantFrom("[", "]", "{", "}", "\"", "\\", "a", ":", ","), { maxLength: 20 })
const jsonWithTrickyStrings = FastCheck.letrec((tie) => ({
  value: FastCheck.oneof(
    { depthSize: "small", withCrossShrink: true },
    FastCheck.oneof(tricky, FastCheck.integer(), FastCheck.boolean(), FastCheck.constant(null)),
    FastCheck.array(tie("value"), { maxLength: 4 }),
    FastCheck.dictionary(tricky, tie("value"), { maxKeys: 4 })
  )
})).value

describe("jsonDepthExceeds", () => {
  it.prop(
    "agrees with the depth of the parsed value, whatever the strings inside hold",
    { value: FastCheck.oneof(FastCheck.jsonValue({ maxDepth: 8 }), jsonWithTrickyStrings), max: FastCheck.nat({ max: 10 }) },
    ({ max, value }) => {
      expect(jsonDepthExceeds(JSON.stringify(value), max)).toBe(depthOf(value) > max)
    }
  )

  it.prop(
    "n brackets deep, of either kind, exceeds the cap exactly when n is past it",
    { n: FastCheck.nat({ max: 3 * MAX_JSON_DEPTH }), object: FastCheck.boolean() },
    ({ n, object }) => {
      const text = object ? `${"{\"a\":".repeat(n)}1${"}".repeat(n)}` : `${"[".repeat(n)}${"]".repeat(n)}`
      expect(jsonDepthExceeds(text)).toBe(n > MAX_JSON_DEPTH)
    }
  )

  it.prop("never throws on arbitrary text, valid JSON or not", { text: FastCheck.string({ unit: "binary", maxLength: 500 }) }, ({ text }) => {
    expect(typeof jsonDepthExceeds(text, 3)).toBe("boolean")
  })

  it("is a linear scan: a million levels are refused without recursion", () => {
    const n = 1_000_000
    expect(jsonDepthExceeds(`${"[".repeat(n)}${"]".repeat(n)}`)).toBe(true)
    expect(jsonDepthExceeds(`"${"[".repeat(n)}"`)).toBe(false)
    expect(jsonDepthExceeds(`["\\"${"[".repeat(n)}"]`)).toBe(false)
  })
})
