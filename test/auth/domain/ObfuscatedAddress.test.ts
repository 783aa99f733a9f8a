import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { parseEmail } from "../../../src/auth/domain/Email.js"
import { obfuscatedAddress } from "../../../src/auth/domain/ObfuscatedAddress.js"

describe("obfuscatedAddress", () => {
  it.prop("is fixed per user and address, differs across users, and is no longer an email address", [
    FastCheck.uuid(), FastCheck.uuid(), FastCheck.emailAddress()
  ], ([a, b, email]) => {
    const value = obfuscatedAddress(a, email, "email")
    expect(obfuscatedAddress(a, email, "email")).toBe(value)
    if (a !== b) expect(obfuscatedAddress(b, email, "email")).not.toBe(value)
    expect(value).not.toContain(email)
    expect(parseEmail(value)._tag).toBe("Left")
  })

  it.prop("a phone becomes 15 characters at most, the column's E.164 length", [FastCheck.uuid(), FastCheck.stringMatching(/^\d{8,15}$/)], ([id, phone]) => {
    const value = obfuscatedAddress(id, phone, "phone")
    expect(value.length).toBe(15)
    expect(value).not.toBe(phone)
  })
})
