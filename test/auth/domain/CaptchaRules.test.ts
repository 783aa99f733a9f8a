import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import {
  captchaMissing,
  captchaRejected,
  captchaTokenOf,
  captchaUnavailable,
  grantNeedsCaptcha
} from "../../../src/auth/domain/CaptchaRules.js"

/** A token as a widget produces one: no surrounding whitespace, not blank. */
const token = FastCheck.string({ minLength: 1 }).map((s) => s.trim()).filter((s) => s !== "")
const blank = FastCheck.array(FastCheck.constantFrom(" ", "\t", "\n", "\r"), { maxLength: 4 }).map((s) => s.join(""))
const notAString = FastCheck.oneof(FastCheck.integer(), FastCheck.boolean(), FastCheck.constant(null), FastCheck.array(FastCheck.string()), FastCheck.object())
/** Body fields a request may carry besides the token's. */
const otherFields = FastCheck.dictionary(
  FastCheck.string().filter((key) => key !== "gotrue_meta_security" && key !== "captcha_token"),
  FastCheck.jsonValue(),
  { maxKeys: 5 }
)

describe("captchaTokenOf", () => {
  it.prop("reads gotrue_meta_security.captcha_token, as auth-js sends it", [token, otherFields, blank, blank], ([t, other, before, after]) => {
    expect(captchaTokenOf({ ...other, gotrue_meta_security: { captcha_token: `${before}${t}${after}` } })).toBe(t)
  })

  it.prop("falls back on a top-level captcha_token", [token, otherFields, FastCheck.oneof(FastCheck.constant(undefined), FastCheck.constant(null), FastCheck.constant({}))], ([t, other, meta]) => {
    expect(captchaTokenOf({ ...other, gotrue_meta_security: meta, captcha_token: t })).toBe(t)
  })

  it.prop("prefers gotrue_meta_security's token to the top-level one", [token, token], ([meta, top]) => {
    expect(captchaTokenOf({ gotrue_meta_security: { captcha_token: meta }, captcha_token: top })).toBe(meta)
  })

  it.prop("a blank or non-string token is no token", [otherFields, FastCheck.oneof(blank, notAString)], ([other, value]) => {
    expect(captchaTokenOf({ ...other, gotrue_meta_security: { captcha_token: value }, captcha_token: value })).toBeUndefined()
    expect(captchaTokenOf({ ...other, gotrue_meta_security: value })).toBeUndefined()
  })

  it.prop("a body that is not an object has no token", [FastCheck.oneof(FastCheck.string(), FastCheck.integer(), FastCheck.constant(null), FastCheck.array(FastCheck.jsonValue()))], ([body]) => {
    expect(captchaTokenOf(body)).toBeUndefined()
  })
})

describe("grantNeedsCaptcha", () => {
  it("exempts exactly GoTrue's refresh_token, pkce and id_token grants", () => {
    expect(["password", "refresh_token", "pkce", "id_token", "web3"].filter(grantNeedsCaptcha)).toStrictEqual(["password", "web3"])
    expect(grantNeedsCaptcha(undefined)).toBe(true)
  })

  it.prop("every other grant, made up or misspelled, needs one", [FastCheck.string()], ([grant]) => {
    expect(grantNeedsCaptcha(grant)).toBe(!["refresh_token", "pkce", "id_token"].includes(grant))
  })

  it("is case-sensitive, as GoTrue's grant names are", () => {
    expect(grantNeedsCaptcha("Refresh_Token")).toBe(true)
    expect(grantNeedsCaptcha(" pkce")).toBe(true)
  })
})


describe("the refusals", () => {
  it("are GoTrue's captcha_failed, with the provider's codes", () => {
    expect(captchaMissing()).toMatchObject({ status: 400, code: "captcha_failed", message: "captcha protection: request disallowed (no captcha_token)" })
    expect(captchaRejected(["invalid-input-response", "timeout-or-duplicate"])).toMatchObject({
      status: 400,
      code: "captcha_failed",
      message: "captcha protection: request disallowed (invalid-input-response, timeout-or-duplicate)"
    })
    expect(captchaRejected([]).message).toBe("captcha protection: request disallowed (no error codes)")
  })

  it("say the provider was unavailable with 503, naming why in words of ours", () => {
    const said = {
      timeout: "the captcha provider did not answer in time",
      unreachable: "the captcha provider could not be reached",
      unexpected_answer: "the captcha provider's answer could not be read"
    } as const
    for (const [reason, words] of Object.entries(said)) {
      expect(captchaUnavailable(reason as keyof typeof said)).toMatchObject({
        status: 503,
        code: "captcha_failed",
        message: `captcha protection: verification unavailable (${words})`
      })
    }
  })
})
