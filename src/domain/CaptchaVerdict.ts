import * as Data from "effect/Data"
import * as Option from "effect/Option"

/** What a captcha provider said of one token. */
export type CaptchaVerdict = Data.TaggedEnum<{
  Passed: {}
  /** The provider's reasons ("invalid-input-response", "timeout-or-duplicate", …), each safe to show a client. */
  Rejected: { readonly errorCodes: ReadonlyArray<string> }
}>

export const CaptchaVerdict = Data.taggedEnum<CaptchaVerdict>()

/**
 * Why the provider said nothing about the token: it did not answer in time, could not be reached, or answered with
 * something that is not a verdict.
 */
export type CaptchaOutage = "timeout" | "unreachable" | "unexpected_answer"

// hCaptcha's and Turnstile's codes are short words joined by hyphens. The list is shown to the client, so anything
// else in it (a proxy's page that happens to parse as JSON, an echo of the input) is dropped rather than passed on.
const ERROR_CODE = /^[a-z0-9][a-z0-9_-]{0,63}$/i
const MAX_ERROR_CODES = 8

/**
 * Reads a siteverify answer; hCaptcha and Turnstile share its shape (`success`, `error-codes`). None when the
 * answer is not one: the provider has not said anything about the token.
 */
export const verdictOf = (answer: unknown): Option.Option<CaptchaVerdict> => {
  if (typeof answer !== "object" || answer === null || Array.isArray(answer)) return Option.none()
  const { success } = answer as { readonly success?: unknown }
  if (typeof success !== "boolean") return Option.none()
  if (success) return Option.some(CaptchaVerdict.Passed())
  const codes = (answer as { readonly "error-codes"?: unknown })["error-codes"]
  const errorCodes = Array.isArray(codes)
    ? [...new Set(codes.filter((code): code is string => typeof code === "string" && ERROR_CODE.test(code)))]
      .slice(0, MAX_ERROR_CODES)
    : []
  return Option.some(CaptchaVerdict.Rejected({ errorCodes }))
}
