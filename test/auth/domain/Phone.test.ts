import { describe, expect, it } from "@effect/vitest"
import { FastCheck, Option } from "effect"
import { formatPhoneNumber, invalidPhoneMessage, normalizePhone } from "../../../src/auth/domain/Phone.js"

const E164 = /^[1-9][0-9]{1,14}$/

describe("normalizePhone", () => {
  it("keeps GoTrue's message verbatim", () => {
    expect(invalidPhoneMessage).toBe("Invalid phone number format (E.164 required)")
  })

  it.each([
    ["+15551234567", "15551234567"],
    ["15551234567", "15551234567"],
    ["+1 555 123 4567", "15551234567"],
    ["+ 44 20 7946 0958", "442079460958"],
    ["12", "12"],
    ["123456789012345", "123456789012345"]
  ])("accepts %j as %j", (input, expected) => {
    expect(normalizePhone(input)).toStrictEqual(Option.some(expected))
  })

  it.each([
    "",
    "+",
    "1",
    "0123456",
    "+0123456",
    "1234567890123456",
    "++15551234567",
    " +15551234567",
    "1+5551234567",
    "+1-555-123-4567",
    "+1 (555) 1234567",
    "+1\t5551234567",
    "+1555123456x",
    "١٢٣٤٥٦"
  ])("rejects %j, as GoTrue strips only one leading + and spaces", (input) => {
    expect(normalizePhone(input)).toStrictEqual(Option.none())
  })

  it("formats without validating, for the password grant's lookup", () => {
    expect(formatPhoneNumber("+1 555-0100")).toBe("1555-0100")
    expect(formatPhoneNumber("++1")).toBe("+1")
  })

  const phoneish = FastCheck.string({
    unit: FastCheck.constantFrom("+", " ", "-", "0", "1", "2", "5", "9", "a", "\t"),
    maxLength: 24
  })
  const digits = FastCheck.string({ unit: FastCheck.constantFrom(..."0123456789"), maxLength: 20 })
  const valid = FastCheck.tuple(
    FastCheck.constantFrom(..."123456789"),
    FastCheck.string({ unit: FastCheck.constantFrom(..."0123456789"), minLength: 1, maxLength: 14 })
  ).map(([first, rest]) => first + rest)

  it.prop("normalizing twice is the same as normalizing once", { input: phoneish }, ({ input }) => {
    const once = normalizePhone(input)
    expect(Option.flatMap(once, normalizePhone)).toStrictEqual(once)
  })

  it.prop("every result is E.164 digits without the +", { input: phoneish }, ({ input }) => {
    Option.map(normalizePhone(input), (phone) => expect(E164.test(phone)).toBe(true))
  })

  it.prop("\"+\" + digits and the digits alone normalize equally", { d: digits }, ({ d }) => {
    expect(normalizePhone(`+${d}`)).toStrictEqual(normalizePhone(d))
  })

  it.prop(
    "a valid number, with or without +, with spaces anywhere, normalizes to its digits",
    {
      phone: valid,
      plus: FastCheck.boolean(),
      spaces: FastCheck.array(FastCheck.tuple(FastCheck.nat(), FastCheck.integer({ min: 1, max: 3 })), { maxLength: 5 })
    },
    ({ phone, plus, spaces }) => {
      const spaced = spaces.reduce((s, [at, n]) => {
        const i = at % (s.length + 1)
        return s.slice(0, i) + " ".repeat(n) + s.slice(i)
      }, phone)
      expect(normalizePhone((plus ? "+" : "") + spaced)).toStrictEqual(Option.some(phone))
    }
  )
})
