import { describe, expect, it } from "@effect/vitest"
import { Duration, Either, FastCheck } from "effect"
import { AuthError } from "../../../src/auth/domain/AuthError.js"
import {
  errorRedirect,
  failuresAfterMiss,
  isExhausted,
  isOtpExpired,
  MAX_OTP_FAILURES,
  messageRedirect,
  pkceMessageRedirect,
  sessionRedirect,
  validateVerifyBody,
  VERIFY_TYPES,
  type VerifyBody
} from "../../../src/auth/domain/Verification.js"

const messageOf = (body: VerifyBody): string | undefined => Either.match(validateVerifyBody(body), {
  onLeft: (error) => error.message,
  onRight: () => undefined
})

const maybe = (value: FastCheck.Arbitrary<string>) => FastCheck.option(value, { nil: undefined })
const text = FastCheck.string({ minLength: 1, maxLength: 8 }).filter((s) => s.trim() !== "")

describe("validateVerifyBody", () => {
  it("asks for a type before anything else", () => {
    expect(messageOf({ token: "1", token_hash: "x" })).toBe("Verify requires a verification type")
  })

  it.prop("needs exactly one of token and token_hash", [maybe(text), maybe(text)], ([token, tokenHash]) => {
    const message = messageOf({ type: "signup", token, token_hash: tokenHash, email: "a@b.co" })
    expect(message === "Verify requires either a token or a token hash").toBe((token === undefined) === (tokenHash === undefined))
  })

  it.prop("a token needs exactly one of email and phone", [FastCheck.boolean(), FastCheck.boolean()], ([email, phone]) => {
    const body = { type: "sms", token: "123456", ...(email ? { email: "a@b.co" } : {}), ...(phone ? { phone: "+1 555 123 4567" } : {}) }
    const result = validateVerifyBody(body)
    if (email === phone) {
      expect(messageOf(body)).toBe("Only an email address or phone number should be provided on verify")
    } else {
      expect(Either.getOrThrow(result)).toMatchObject({
        _tag: "Code",
        recipient: email ? { _tag: "Email", email: "a@b.co" } : { _tag: "Phone", phone: "15551234567" }
      })
    }
  })

  it.prop("a token_hash comes alone", [maybe(text), maybe(text), maybe(text)], ([email, phone, redirectTo]) => {
    const message = messageOf({ type: "signup", token_hash: "h", email, phone, redirect_to: redirectTo })
    const alone = email === undefined && phone === undefined && redirectTo === undefined
    expect(message).toBe(alone ? undefined : "Only the token_hash and type should be provided")
  })

  it.prop("any other type is unsupported, after the body rules", [text], ([type]) => {
    const expected = (VERIFY_TYPES as ReadonlyArray<string>).includes(type) ? undefined : "Unsupported verification type"
    expect(messageOf({ type, token_hash: "h" })).toBe(expected)
    expect(messageOf({ type, token_hash: "h", email: "a@b.co" })).toBe("Only the token_hash and type should be provided")
  })

  it("validates the address like sign-up does", () => {
    expect(messageOf({ type: "signup", token: "1", email: "not an email" })).toBe("Unable to validate email address: invalid format")
    expect(messageOf({ type: "sms", token: "1", phone: "555-1234" })).toBe("Invalid phone number format (E.164 required)")
    expect(Either.getOrThrow(validateVerifyBody({ type: "signup", token: "1", email: " A@B.co " }))).toMatchObject({
      recipient: { email: "a@b.co" }
    })
  })
})

describe("the attempt limit", () => {
  it.prop("counts misses against one token and starts over for another", [FastCheck.integer({ min: 1, max: 20 })], ([misses]) => {
    let state: { tokenHash: string; failures: number } | undefined
    for (let i = 0; i < misses; i++) state = { tokenHash: "a", failures: failuresAfterMiss(state, "a") }
    expect(state!.failures).toBe(misses)
    expect(isExhausted(state!.failures)).toBe(misses >= MAX_OTP_FAILURES)
    expect(failuresAfterMiss(state, "b")).toBe(1)
  })

  it("allows four misses and invalidates on the fifth", () => {
    expect(isExhausted(4)).toBe(false)
    expect(isExhausted(5)).toBe(true)
  })
})

describe("isOtpExpired", () => {
  const sent = new Date(Date.UTC(2030, 0, 1))
  it.prop("a token lasts exactly its validity", [FastCheck.integer({ min: 0, max: 200_000 })], ([ms]) => {
    expect(isOtpExpired(sent, Duration.seconds(60), new Date(sent.getTime() + ms))).toBe(ms > 60_000)
  })
  it("a token never sent is expired", () => {
    expect(isOtpExpired(null, Duration.days(1), sent)).toBe(true)
  })
})

describe("GET /verify redirects", () => {
  it.prop(
    "carry the session in a sorted fragment, replacing any other, with GoTrue's trailing sb",
    [FastCheck.string(), FastCheck.string(), FastCheck.integer({ min: 0 })],
    ([access, refresh, expiresAt]) => {
      const location = sessionRedirect("https://app.example.com/cb?x=1#old", {
        access_token: access,
        refresh_token: refresh,
        expires_at: expiresAt,
        expires_in: 3600,
        token_type: "bearer"
      }, "signup")
      expect(location.startsWith("https://app.example.com/cb?x=1#access_token=")).toBe(true)
      expect(location.endsWith("&sb=")).toBe(true)
      const fragment = new URLSearchParams(location.slice(location.indexOf("#") + 1))
      expect([...fragment.keys()]).toEqual(["access_token", "expires_at", "expires_in", "refresh_token", "token_type", "type", "sb"])
      expect(fragment.get("access_token")).toBe(access)
      expect(fragment.get("refresh_token")).toBe(refresh)
      expect(fragment.get("expires_at")).toBe(String(expiresAt))
    }
  )

  it("carry an error as access_denied, or server_error for a 5xx", () => {
    expect(errorRedirect("https://a.example", AuthError.of(403, "otp_expired", "Email link is invalid or has expired")))
      .toBe("https://a.example#error=access_denied&error_code=otp_expired&error_description=Email+link+is+invalid+or+has+expired&sb=")
    expect(errorRedirect("https://a.example", AuthError.unexpected())).toMatch(/^https:\/\/a\.example#error=server_error&/)
  })

  it("carry the first half of an email change's message in the fragment, and in a PKCE flow in the query too", () => {
    expect(messageRedirect("https://a.example/x?k=1", "Confirmation link accepted")).toBe(
      "https://a.example/x?k=1#message=Confirmation+link+accepted&sb="
    )
    expect(pkceMessageRedirect("https://a.example/x?k=1#old", "Confirmation link accepted")).toBe(
      "https://a.example/x?k=1&message=Confirmation+link+accepted#message=Confirmation+link+accepted&sb="
    )
  })
})
