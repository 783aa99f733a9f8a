import type { CaptchaOutage } from "../../domain/CaptchaVerdict.js"
import { AuthError } from "./AuthError.js"

/**
 * The token a request carries: `gotrue_meta_security.captcha_token`, where GoTrue reads it and @supabase/auth-js
 * puts `options.captchaToken`, or else a top-level `captcha_token`, as spec/auth-server.md names it. Surrounding
 * whitespace is dropped and a blank token is no token, as in GoTrue.
 */
export const captchaTokenOf = (body: unknown): string | undefined => {
  if (!isRecord(body)) return undefined
  const meta = body["gotrue_meta_security"]
  return nonBlank(isRecord(meta) ? meta["captcha_token"] : undefined) ?? nonBlank(body["captcha_token"])
}

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const nonBlank = (value: unknown): string | undefined => {
  const trimmed = typeof value === "string" ? value.trim() : ""
  return trimmed === "" ? undefined : trimmed
}

/**
 * GoTrue's exemptions on POST /token: grants that continue a sign-in already made (refresh_token, pkce) or proven
 * by a provider (id_token). Every other grant, an unknown or missing one included, needs a captcha, so a grant
 * added later is protected until it is exempted on purpose.
 */
const EXEMPT_GRANTS: ReadonlySet<string> = new Set(["refresh_token", "pkce", "id_token"])

export const grantNeedsCaptcha = (grantType: string | undefined): boolean =>
  grantType === undefined || !EXEMPT_GRANTS.has(grantType)

const disallowed = (detail: string): AuthError =>
  AuthError.of(400, "captcha_failed", `captcha protection: request disallowed (${detail})`)

export const captchaMissing = (): AuthError => disallowed("no captcha_token")

/** GoTrue's refusal, with the provider's error codes. */
export const captchaRejected = (errorCodes: ReadonlyArray<string>): AuthError =>
  disallowed(errorCodes.length > 0 ? errorCodes.join(", ") : "no error codes")

const UNAVAILABLE: Readonly<Record<CaptchaOutage, string>> = {
  timeout: "the captcha provider did not answer in time",
  unreachable: "the captcha provider could not be reached",
  unexpected_answer: "the captcha provider's answer could not be read"
}

/**
 * The provider said nothing about the token: 503, since trying again later can succeed (auth-js reports it as an
 * AuthRetryableFetchError). GoTrue answers 500 there; the request is refused either way.
 */
export const captchaUnavailable = (reason: CaptchaOutage): AuthError =>
  AuthError.of(503, "captcha_failed", `captcha protection: verification unavailable (${UNAVAILABLE[reason]})`)
