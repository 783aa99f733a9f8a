import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import {
  checkPassword,
  MAX_PASSWORD_BYTES,
  minimumLengthMessage,
  PasswordCheck,
  type PasswordPolicy,
  passwordTooLongMessage,
  requiresCharactersMessage
} from "../../../src/auth/domain/PasswordPolicy.js"

const GOTRUE_SETS = ["abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789"]
const lax: PasswordPolicy = { minLength: 0, requiredCharacters: [] }
const utf8Bytes = (s: string): number => new TextEncoder().encode(s).length
const codePoints = (s: string): ReadonlyArray<string> => [...s]

describe("checkPassword", () => {
  it("keeps GoTrue's exact messages, which clients match on", () => {
    expect(passwordTooLongMessage).toBe("Password cannot be longer than 72 characters")
    expect(minimumLengthMessage(6)).toBe("Password should be at least 6 characters.")
    expect(requiresCharactersMessage(GOTRUE_SETS)).toBe(
      "Password should contain at least one character of each: " +
        "abcdefghijklmnopqrstuvwxyz, ABCDEFGHIJKLMNOPQRSTUVWXYZ, 0123456789."
    )
  })

  it("accepts a password that meets every rule", () => {
    expect(checkPassword("Secret123", { minLength: 8, requiredCharacters: GOTRUE_SETS })).toStrictEqual(
      PasswordCheck.Ok()
    )
  })

  it("reports both reasons, in GoTrue's order, with the messages joined by a space", () => {
    expect(checkPassword("abc", { minLength: 8, requiredCharacters: GOTRUE_SETS })).toStrictEqual(
      PasswordCheck.Weak({
        reasons: ["length", "characters"],
        message: "Password should be at least 8 characters. " +
          "Password should contain at least one character of each: " +
          "abcdefghijklmnopqrstuvwxyz, ABCDEFGHIJKLMNOPQRSTUVWXYZ, 0123456789."
      })
    )
  })

  it("reports 'characters' once however many sets are missing", () => {
    const result = checkPassword("!!!!!!!!", { minLength: 6, requiredCharacters: GOTRUE_SETS })
    expect(result).toStrictEqual(
      PasswordCheck.Weak({ reasons: ["characters"], message: requiresCharactersMessage(GOTRUE_SETS) })
    )
  })

  it("draws the 72 limit in UTF-8 bytes", () => {
    expect(checkPassword("a".repeat(72), lax)).toStrictEqual(PasswordCheck.Ok())
    expect(checkPassword("a".repeat(73), lax)).toStrictEqual(PasswordCheck.TooLong())
    expect(checkPassword("é".repeat(36), lax)).toStrictEqual(PasswordCheck.Ok())
    expect(checkPassword("é".repeat(36) + "a", lax)).toStrictEqual(PasswordCheck.TooLong())
    expect(checkPassword("€".repeat(24), lax)).toStrictEqual(PasswordCheck.Ok())
    expect(checkPassword("😀".repeat(18), lax)).toStrictEqual(PasswordCheck.Ok())
    expect(checkPassword("😀".repeat(18) + "a", lax)).toStrictEqual(PasswordCheck.TooLong())
  })

  it("prefers TooLong to Weak, as GoTrue refuses the length before judging strength", () => {
    expect(checkPassword("a".repeat(100), { minLength: 6, requiredCharacters: GOTRUE_SETS })).toStrictEqual(
      PasswordCheck.TooLong()
    )
  })

  it("counts the minimum length in code points, not bytes or UTF-16 units", () => {
    const policy = { minLength: 6, requiredCharacters: [] }
    expect(checkPassword("ééé", policy)._tag).toBe("Weak")
    expect(checkPassword("😀😀😀", policy)._tag).toBe("Weak")
    expect(checkPassword("😀😀😀😀😀😀", policy)).toStrictEqual(PasswordCheck.Ok())
  })

  it("matches characters outside the BMP as whole characters", () => {
    const policy = { minLength: 1, requiredCharacters: ["😀"] }
    expect(checkPassword("x😀", policy)).toStrictEqual(PasswordCheck.Ok())
    expect(checkPassword("x\ud83d", policy)._tag).toBe("Weak")
  })

  it("ignores an empty set instead of failing every password", () => {
    expect(checkPassword("abcdef", { minLength: 6, requiredCharacters: ["", "abc"] })).toStrictEqual(
      PasswordCheck.Ok()
    )
  })

  const charSet = FastCheck.string({ unit: "binary", minLength: 1, maxLength: 8 })
  const compliant = FastCheck.record({
    sets: FastCheck.array(charSet, { minLength: 0, maxLength: 5 }),
    minLength: FastCheck.integer({ min: 1, max: 40 }),
    picks: FastCheck.array(FastCheck.nat(), { minLength: 5, maxLength: 5 }),
    padding: FastCheck.string({ unit: "grapheme-ascii", maxLength: 40 })
  }).map(({ minLength, padding, picks, sets }) => {
    const required = sets.map((set, i) => {
      const members = codePoints(set)
      return members[picks[i]! % members.length]!
    })
    const base = required.join("") + padding
    const password = base + "x".repeat(Math.max(0, minLength - codePoints(base).length))
    return { password, policy: { minLength, requiredCharacters: sets } satisfies PasswordPolicy }
  })

  it.prop("a long-enough password with one character of each set is Ok", { c: compliant }, ({ c }) => {
    expect(utf8Bytes(c.password)).toBeLessThanOrEqual(MAX_PASSWORD_BYTES)
    expect(checkPassword(c.password, c.policy)).toStrictEqual(PasswordCheck.Ok())
  })

  it.prop(
    "removing every character of one set gives reason 'characters'",
    { c: compliant.filter(({ policy }) => policy.requiredCharacters.length > 0), pick: FastCheck.nat() },
    ({ c, pick }) => {
      const sets = c.policy.requiredCharacters
      const removed = new Set(sets[pick % sets.length]!)
      const password = codePoints(c.password).filter((ch) => !removed.has(ch)).join("")
      const result = checkPassword(password, c.policy)
      expect(result._tag).toBe("Weak")
      if (result._tag === "Weak") {
        expect(result.reasons).toContain("characters")
        expect(result.message).toContain(requiresCharactersMessage(sets))
      }
    }
  )

  it.prop(
    "a password shorter than the minimum gives reason 'length' (unless it is too long in bytes)",
    {
      minLength: FastCheck.integer({ min: 1, max: 72 }),
      password: FastCheck.string({ unit: "binary", maxLength: 71 }),
      sets: FastCheck.array(charSet, { maxLength: 3 })
    },
    ({ minLength, password, sets }) => {
      const short = codePoints(password).slice(0, minLength - 1).join("")
      const result = checkPassword(short, { minLength, requiredCharacters: sets })
      if (utf8Bytes(short) > MAX_PASSWORD_BYTES) {
        expect(result).toStrictEqual(PasswordCheck.TooLong())
      } else {
        expect(result._tag).toBe("Weak")
        if (result._tag === "Weak") {
          expect(result.reasons[0]).toBe("length")
          expect(result.message.startsWith(minimumLengthMessage(minLength))).toBe(true)
        }
      }
    }
  )

  it.prop(
    "more than 72 UTF-8 bytes is TooLong whatever the content and policy",
    {
      password: FastCheck.string({ unit: "binary", minLength: 19, maxLength: 200 }).filter((s) => utf8Bytes(s) > 72),
      minLength: FastCheck.integer({ min: 0, max: 72 }),
      sets: FastCheck.array(charSet, { maxLength: 4 })
    },
    ({ minLength, password, sets }) => {
      expect(checkPassword(password, { minLength, requiredCharacters: sets })).toStrictEqual(PasswordCheck.TooLong())
    }
  )

  it.prop(
    "the byte count agrees with a UTF-8 encoder, lone surrogates included",
    { password: FastCheck.string({ unit: FastCheck.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)), maxLength: 80 }) },
    ({ password }) => {
      expect(checkPassword(password, lax)._tag).toBe(utf8Bytes(password) > MAX_PASSWORD_BYTES ? "TooLong" : "Ok")
    }
  )
})
