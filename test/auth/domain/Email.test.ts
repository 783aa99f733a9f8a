import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck, Option } from "effect"
import {
  emailProblemMessage,
  invalidEmailFormatMessage,
  MAX_EMAIL_LENGTH,
  normalizeEmail,
  parseEmail
} from "../../../src/auth/domain/Email.js"

describe("normalizeEmail", () => {
  it("keeps GoTrue's message verbatim", () => {
    expect(invalidEmailFormatMessage).toBe("Unable to validate email address: invalid format")
    expect(emailProblemMessage.InvalidFormat).toBe(invalidEmailFormatMessage)
  })

  it.each([
    ["florian@carrere.cc", "florian@carrere.cc"],
    ["  Florian@Carrere.CC\n", "florian@carrere.cc"],
    ["test@912-wrong-domain902.com", "test@912-wrong-domain902.com"],
    ["0932910-qsdcqozuioqkdmqpeidj8793@gmail.com", "0932910-qsdcqozuioqkdmqpeidj8793@gmail.com"],
    ["a@gmail.fi", "a@gmail.fi"],
    ["user@localhost", "user@localhost"],
    ["first.last+tag@sub.example.co.uk", "first.last+tag@sub.example.co.uk"],
    ["!#$%&'*+/=?^_`{|}~-@x.io", "!#$%&'*+/=?^_`{|}~-@x.io"],
    [`a@${"b".repeat(63)}.com`, `a@${"b".repeat(63)}.com`],
    [`${"a".repeat(64)}@x.io`, `${"a".repeat(64)}@x.io`],
    [`${"a.".repeat(31)}aa@x.io`, `${"a.".repeat(31)}aa@x.io`]
  ])("accepts %j as %j", (input, expected) => {
    expect(normalizeEmail(input)).toStrictEqual(Option.some(expected))
  })

  it.each([
    "",
    "   ",
    "plainaddress",
    "@gmail.com",
    "test@",
    "test@gmail@gmail.com",
    "test test@gmail.com",
    "test@wrong domain.com",
    "é&ààà@gmail.com",
    ".a@x.com",
    "a.@x.com",
    "a..b@x.com",
    "a@.x.com",
    "a@x.com.",
    "a@x..com",
    "a@-x.com",
    "a@x-.com",
    "a@x_y.com",
    `a@${"b".repeat(64)}.com`,
    `${"a".repeat(65)}@x.io`,
    `${"a.".repeat(32)}a@x.io`,
    "\"quoted\"@x.com",
    "a@[127.0.0.1]",
    "\u212Aelvin@x.com"
  ])("rejects %j", (input) => {
    expect(normalizeEmail(input)).toStrictEqual(Option.none())
  })

  it("tells the three GoTrue failures apart", () => {
    expect(parseEmail(" ")).toStrictEqual(Either.left("Required"))
    expect(parseEmail(`${"a".repeat(MAX_EMAIL_LENGTH)}@x.io`)).toStrictEqual(Either.left("TooLong"))
    expect(parseEmail("a b@x.io")).toStrictEqual(Either.left("InvalidFormat"))
  })

  it("allows exactly 255 characters", () => {
    // A 64-character local part (the most there is) and a domain of 63-character labels.
    const domain = `${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(MAX_EMAIL_LENGTH - 64 - 1 - 128 - 3)}.io`
    const at255 = `${"a".repeat(64)}@${domain}`
    expect(at255.length).toBe(255)
    expect(normalizeEmail(at255)).toStrictEqual(Option.some(at255))
    expect(normalizeEmail(`${at255}o`)).toStrictEqual(Option.none())
  })

  const address = FastCheck.emailAddress().filter((e) => e.length <= MAX_EMAIL_LENGTH)
  const shouted = FastCheck.tuple(address, FastCheck.array(FastCheck.boolean(), { maxLength: 300 })).map(
    ([email, upper]) => [...email].map((ch, i) => (upper[i] ? ch.toUpperCase() : ch)).join("")
  )
  const padding = FastCheck.constantFrom("", " ", "\t", "\n ", "\u00a0")

  it.prop(
    "any address from emailAddress() normalizes to its lower-case form, whatever its case and padding",
    { email: shouted, before: padding, after: padding },
    ({ after, before, email }) => {
      expect(normalizeEmail(before + email + after)).toStrictEqual(Option.some(email.toLowerCase()))
    }
  )

  const mixed = FastCheck.oneof(
    FastCheck.string(),
    FastCheck.string({ unit: "binary" }),
    shouted,
    FastCheck.tuple(shouted, FastCheck.nat(), FastCheck.constantFrom(" ", "@", ".", "..", "-", "é", "\u212A")).map(
      ([email, at, insert]) => email.slice(0, at % (email.length + 1)) + insert + email.slice(at % (email.length + 1))
    )
  )

  it.prop("normalizing twice is the same as normalizing once", { input: mixed }, ({ input }) => {
    const once = normalizeEmail(input)
    expect(Option.flatMap(once, normalizeEmail)).toStrictEqual(once)
  })

  it.prop("a normalized address is lower-case, unpadded, with exactly one @", { input: mixed }, ({ input }) => {
    Option.map(normalizeEmail(input), (email) => {
      expect(email).toBe(email.toLowerCase())
      expect(email).toBe(email.trim())
      expect(email.split("@")).toHaveLength(2)
      expect(email.length).toBeLessThanOrEqual(MAX_EMAIL_LENGTH)
      expect(/^[\x21-\x7e]+$/.test(email)).toBe(true)
    })
  })

  it.prop(
    "a space or a second @ inside an address makes it invalid",
    { email: address, at: FastCheck.nat(), insert: FastCheck.constantFrom(" ", "@") },
    ({ at, email, insert }) => {
      const i = 1 + (at % (email.length - 1))
      expect(normalizeEmail(email.slice(0, i) + insert + email.slice(i))).toStrictEqual(Option.none())
    }
  )
})
