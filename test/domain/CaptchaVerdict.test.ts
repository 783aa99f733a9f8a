import { describe, expect, it } from "@effect/vitest"
import { FastCheck, Option } from "effect"
import { CaptchaVerdict, verdictOf } from "../../src/domain/CaptchaVerdict.js"

// The codes hCaptcha and Turnstile document, which must reach the client unchanged.
const KNOWN_CODES = [
  "missing-input-secret",
  "invalid-input-secret",
  "missing-input-response",
  "invalid-input-response",
  "bad-request",
  "invalid-or-already-seen-response",
  "not-using-dummy-passcode",
  "sitekey-secret-mismatch",
  "timeout-or-duplicate",
  "internal-error"
]

const SAFE_CODE = /^[a-z0-9][a-z0-9_-]{0,63}$/i

/** Any other fields a provider may add (hostname, challenge_ts, action, cdata, …). */
const extraFields = FastCheck.dictionary(
  FastCheck.string().filter((key) => key !== "success" && key !== "error-codes"),
  FastCheck.jsonValue(),
  { maxKeys: 5 }
)

describe("verdictOf", () => {
  it("reads hCaptcha's and Turnstile's answers", () => {
    expect(verdictOf({ success: true, challenge_ts: "2030-01-01T00:00:00Z", hostname: "example.com" }))
      .toStrictEqual(Option.some(CaptchaVerdict.Passed()))
    expect(verdictOf({ success: false, "error-codes": ["invalid-input-response", "timeout-or-duplicate"] }))
      .toStrictEqual(Option.some(CaptchaVerdict.Rejected({ errorCodes: ["invalid-input-response", "timeout-or-duplicate"] })))
    expect(verdictOf({ success: false })).toStrictEqual(Option.some(CaptchaVerdict.Rejected({ errorCodes: [] })))
  })

  it.prop("success: true passes whatever else the answer holds", [extraFields], ([extra]) => {
    expect(verdictOf({ ...extra, success: true, "error-codes": ["ignored"] })).toStrictEqual(Option.some(CaptchaVerdict.Passed()))
  })

  it.prop("documented codes reach the verdict in order", [FastCheck.subarray(KNOWN_CODES, { maxLength: 8 }), extraFields], ([codes, extra]) => {
    expect(verdictOf({ ...extra, success: false, "error-codes": codes }))
      .toStrictEqual(Option.some(CaptchaVerdict.Rejected({ errorCodes: codes })))
  })

  it.prop(
    "a rejection only shows codes that were in the answer and look like codes: at most 8, none twice",
    [FastCheck.array(FastCheck.oneof(FastCheck.constantFrom(...KNOWN_CODES), FastCheck.string(), FastCheck.jsonValue()), { maxLength: 20 })],
    ([codes]) => {
      const verdict = verdictOf({ success: false, "error-codes": codes })
      expect(Option.isSome(verdict)).toBe(true)
      const { errorCodes } = Option.getOrThrow(verdict) as Extract<CaptchaVerdict, { _tag: "Rejected" }>
      expect(errorCodes.length).toBeLessThanOrEqual(8)
      expect(new Set(errorCodes).size).toBe(errorCodes.length)
      for (const code of errorCodes) {
        expect(code).toMatch(SAFE_CODE)
        expect(codes).toContain(code)
      }
    }
  )

  it("drops what is not a code: markup, spaces, a value echoed back", () => {
    const verdict = verdictOf({ success: false, "error-codes": ["<b>oops</b>", "secret=s3cr3t", "two words", "", "bad-request"] })
    expect(verdict).toStrictEqual(Option.some(CaptchaVerdict.Rejected({ errorCodes: ["bad-request"] })))
  })

  it.prop(
    "anything without a boolean success is no verdict",
    [FastCheck.jsonValue().filter((value) =>
      typeof value !== "object" || value === null || Array.isArray(value) || typeof (value as Record<string, unknown>)["success"] !== "boolean"
    )],
    ([answer]) => {
      expect(verdictOf(answer)).toStrictEqual(Option.none())
    }
  )

  it("a success given as a string or number is no verdict", () => {
    expect(verdictOf({ success: "true" })).toStrictEqual(Option.none())
    expect(verdictOf({ success: 1 })).toStrictEqual(Option.none())
    expect(verdictOf(undefined)).toStrictEqual(Option.none())
  })
})
