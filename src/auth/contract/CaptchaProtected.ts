import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as Schema from "effect/Schema"
import { AuthErrors } from "../http/AuthErrors.js"

/**
 * GoTrue's verifyCaptcha: with SECURITY_CAPTCHA_ENABLED, the request's captcha token must pass the provider's check
 * before the handler runs (an admin JWT skips it).
 */
const CaptchaRefusals = Schema.Union(
  AuthErrors.refused(400, ["captcha_failed"], "`captcha_failed` with SECURITY_CAPTCHA_ENABLED, for a missing or refused token."),
  AuthErrors.refused(503, ["captcha_failed"], "`captcha_failed` with 503 when the captcha provider cannot be asked (GoTrue: 500).")
)

export class CaptchaProtected extends HttpApiMiddleware.Tag<CaptchaProtected>()("auth/CaptchaProtected", {
  failure: CaptchaRefusals
}) {}

/** The same for POST /token, whose refresh_token, pkce and id_token grants are exempt, as in GoTrue. */
export class TokenCaptchaProtected extends HttpApiMiddleware.Tag<TokenCaptchaProtected>()("auth/TokenCaptchaProtected", {
  failure: CaptchaRefusals
}) {}
