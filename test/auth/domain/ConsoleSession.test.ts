import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import {
  type ConsoleSession,
  consoleKeys,
  formToken,
  formTokenMatches,
  openSession,
  sealSession,
  sessionExpiry
} from "../../../src/auth/domain/ConsoleSession.js"

const KEYS = consoleKeys("test-secret-that-is-at-least-32-characters-long")
const OTHER_KEYS = consoleKeys("another-secret-that-is-at-least-32-characters")
const NOW = 1_900_000_000

const uuid = FastCheck.uuid().map((id) => id.toLowerCase())
const session: FastCheck.Arbitrary<ConsoleSession> = FastCheck.record({
  role: FastCheck.constantFrom("service_role", "supabase_admin", "admin"),
  boundTo: FastCheck.option(FastCheck.record({ userId: uuid, sessionId: uuid }), { nil: undefined }),
  issuedAt: FastCheck.integer({ min: NOW - 3_600, max: NOW }),
  expiresAt: FastCheck.integer({ min: NOW + 1, max: NOW + 86_400 }),
  nonce: FastCheck.stringMatching(/^[A-Za-z0-9_-]{16,64}$/)
})

describe("the admin console's session cookie", () => {
  it.prop("opens to the session it sealed while it lasts", [session], ([s]) => {
    expect(openSession(KEYS, sealSession(KEYS, s), NOW)).toEqual(s)
  })

  it.prop("holds only cookie-safe characters", [session], ([s]) => {
    expect(sealSession(KEYS, s)).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/)
  })

  it.prop("a change of any one character is refused", [session, FastCheck.nat(), FastCheck.constantFrom(..."AZaz09-_.x")], ([s, at, replacement]) => {
    const cookie = sealSession(KEYS, s)
    const index = at % cookie.length
    FastCheck.pre(cookie[index] !== replacement)
    expect(openSession(KEYS, cookie.slice(0, index) + replacement + cookie.slice(index + 1), NOW)).toBeUndefined()
  })

  it.prop("is refused from its expiry on, and under another JWT secret", [session], ([s]) => {
    const cookie = sealSession(KEYS, s)
    expect(openSession(KEYS, cookie, s.expiresAt)).toBeUndefined()
    expect(openSession(KEYS, cookie, s.expiresAt + 1)).toBeUndefined()
    expect(openSession(OTHER_KEYS, cookie, NOW)).toBeUndefined()
  })

  it("refuses a cookie without a signature, with claims of its own, or of another shape", () => {
    const s: ConsoleSession = { role: "service_role", issuedAt: NOW, expiresAt: NOW + 60, nonce: "abcdefghijklmnopqrstuvwx" }
    const [version, claims] = sealSession(KEYS, s).split(".")
    expect(openSession(KEYS, `${version}.${claims}`, NOW)).toBeUndefined()
    expect(openSession(KEYS, `${version}.${claims}.`, NOW)).toBeUndefined()
    const forged = Buffer.from(JSON.stringify({ r: "service_role", i: NOW, e: NOW + 999_999, n: "abcdefghijklmnopqrstuvwx" })).toString("base64url")
    expect(openSession(KEYS, `${version}.${forged}.${sealSession(KEYS, s).split(".")[2]}`, NOW)).toBeUndefined()
    for (const junk of [undefined, "", "v1", "v1..", "v2.a.b", "service_role", "x".repeat(5000)]) expect(openSession(KEYS, junk, NOW)).toBeUndefined()
  })

  it("never holds the key it was started with, nor the JWT secret", () => {
    const cookie = sealSession(KEYS, { role: "service_role", issuedAt: NOW, expiresAt: NOW + 60, nonce: "abcdefghijklmnopqrstuvwx" })
    const decoded = Buffer.from(cookie.split(".")[1]!, "base64url").toString("utf8")
    expect(Object.keys(JSON.parse(decoded)).sort()).toEqual(["e", "i", "n", "r"])
    expect(cookie).not.toContain("test-secret")
  })

  it.prop("ends at the console's lifetime or the key's expiry, whichever comes first", [
    FastCheck.integer({ min: 60, max: 86_400 }), FastCheck.option(FastCheck.integer({ min: NOW - 10, max: NOW + 100_000 }), { nil: undefined })
  ], ([lifetime, keyExpiry]) => {
    const end = sessionExpiry(NOW, lifetime, keyExpiry)
    expect(end).toBeLessThanOrEqual(NOW + lifetime)
    if (keyExpiry !== undefined) expect(end).toBeLessThanOrEqual(keyExpiry)
    expect(end === NOW + lifetime || end === keyExpiry).toBe(true)
  })
})

describe("the console's form token", () => {
  it.prop("matches its own session only", [session, session], ([a, b]) => {
    const ca = sealSession(KEYS, a)
    const cb = sealSession(KEYS, b)
    FastCheck.pre(ca !== cb)
    expect(formTokenMatches(KEYS, ca, formToken(KEYS, ca))).toBe(true)
    expect(formTokenMatches(KEYS, cb, formToken(KEYS, ca))).toBe(false)
    expect(formTokenMatches(KEYS, ca, undefined)).toBe(false)
    expect(formTokenMatches(KEYS, ca, "")).toBe(false)
  })

  it.prop("is not the session's signature, and differs under another secret", [session], ([s]) => {
    const cookie = sealSession(KEYS, s)
    expect(formToken(KEYS, cookie)).not.toBe(cookie.split(".")[2])
    expect(formToken(OTHER_KEYS, cookie)).not.toBe(formToken(KEYS, cookie))
  })

  it.prop("a changed character is refused", [session, FastCheck.nat(), FastCheck.constantFrom(..."AZaz09-_=")], ([s, at, replacement]) => {
    const cookie = sealSession(KEYS, s)
    const token = formToken(KEYS, cookie)
    const index = at % token.length
    FastCheck.pre(token[index] !== replacement)
    expect(formTokenMatches(KEYS, cookie, token.slice(0, index) + replacement + token.slice(index + 1))).toBe(false)
  })
})
