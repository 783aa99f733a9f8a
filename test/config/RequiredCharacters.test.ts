import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { parseRequiredCharacters } from "../../src/config/RequiredCharacters.js"

describe("parseRequiredCharacters", () => {
  it("splits GoTrue's documented value, where \\: is the colon of the last set", () => {
    // As written in a .env file: ...{};'\\:"|<>?,./`~ — the first backslash is a member of the set,
    // the second escapes the colon.
    const raw = "abcdefghijklmnopqrstuvwxyz:ABCDEFGHIJKLMNOPQRSTUVWXYZ:0123456789:!@#$%^&*()_+-=[]{};'\\\\:\"|<>?,./`~"
    const sets = parseRequiredCharacters(raw)
    expect(sets).toStrictEqual([
      "abcdefghijklmnopqrstuvwxyz",
      "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
      "0123456789",
      "!@#$%^&*()_+-=[]{};'\\:\"|<>?,./`~"
    ])
    expect(sets[3]).toContain(":")
    expect(sets[3]).toContain("\\")
  })

  it.each([
    ["a:b:c", ["a", "b", "c"]],
    ["a\\:b:c", ["a:b", "c"]],
    ["a:b\\:c", ["a", "b:c"]],
    ["\\:a:b:c", [":a", "b", "c"]],
    ["a:b:c\\:", ["a", "b", "c:"]],
    ["::\\::", [":"]],
    ["abc", ["abc"]],
    ["", []],
    [":::", []],
    ["a\\b:c", ["a\\b", "c"]],
    ["a\\\\:b", ["a\\:b"]]
  ] as const)("%j", (raw, expected) => {
    expect(parseRequiredCharacters(raw)).toStrictEqual(expected)
  })

  const plainSet = FastCheck.string({ minLength: 1, maxLength: 12 }).filter((s) => !s.includes(":") && !s.includes("\\"))
  const anySet = FastCheck.string({ minLength: 1, maxLength: 12 }).filter((s) => !s.includes("\\"))

  it.prop("joining sets without ':' or '\\' with ':' and splitting gives them back", {
    sets: FastCheck.array(plainSet, { minLength: 1, maxLength: 8 })
  }, ({ sets }) => {
    expect(parseRequiredCharacters(sets.join(":"))).toStrictEqual(sets)
  })

  it.prop("a ':' inside a set escaped as '\\:' round-trips", {
    sets: FastCheck.array(anySet, { minLength: 1, maxLength: 8 })
  }, ({ sets }) => {
    const raw = sets.map((set) => set.replaceAll(":", "\\:")).join(":")
    expect(parseRequiredCharacters(raw)).toStrictEqual(sets)
  })
})
