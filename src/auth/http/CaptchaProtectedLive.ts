import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import { AuthConfig } from "../../config/AuthConfig.js"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { AuthMetrics } from "../metrics/AuthMetrics.js"
import { Captcha } from "../../platform/Captcha.js"
import { bearerToken } from "../../platform/http/Bearer.js"
import { CaptchaProtected, TokenCaptchaProtected } from "../contract/CaptchaProtected.js"
import type { AuthError } from "../domain/AuthError.js"
import {
  captchaMissing,
  captchaRejected,
  captchaTokenOf,
  captchaUnavailable,
  grantNeedsCaptcha
} from "../domain/CaptchaRules.js"
import { clientHeaderName, requestClient } from "../../platform/http/RateLimitKey.js"
import { adminCheck } from "./AdminAuthenticatedLive.js"

type SearchParams = Readonly<Record<string, string | ReadonlyArray<string>>>

/**
 * GoTrue's verifyCaptcha (reference §7), in its order: off unless SECURITY_CAPTCHA_ENABLED; admin credentials skip
 * it; then the body's token must pass the provider's check. It runs before the handler decodes the body, so a
 * refused request creates nothing and sends nothing. The body is read as the handler reads it (a broken one is the
 * same 400 bad_json as without captcha), once: the edge keeps its text for the handler.
 */
const captchaGuard = (applies: (params: SearchParams) => boolean) =>
  Effect.gen(function*() {
    const config = yield* AuthConfig
    const platform = yield* PlatformConfig
    const captcha = yield* Captcha
    const isAdmin = yield* adminCheck(new Set(config.jwt.adminRoles))
    if (!config.security.captcha.enabled) return Effect.void
    const addressHeader = clientHeaderName(platform.api.clientHeader)

    const refuse = (error: AuthError) => Effect.zipRight(Metric.increment(AuthMetrics.captchaRejected), Effect.fail(error))

    return Effect.gen(function*() {
      if (!applies(yield* HttpServerRequest.ParsedSearchParams)) return
      const request = yield* HttpServerRequest.HttpServerRequest
      if (bearerToken(request.headers["authorization"]) !== undefined && (yield* Effect.isSuccess(isAdmin))) return
      const token = captchaTokenOf(yield* Effect.orDie(request.json))
      if (token === undefined) return yield* refuse(captchaMissing())
      const remoteIp = requestClient(request, addressHeader)
      const verdict = yield* captcha.verify({ token, remoteIp }).pipe(
        Effect.catchAll((unavailable) =>
          Effect.logWarning("captcha verification unavailable").pipe(
            Effect.annotateLogs({ provider: unavailable.provider, reason: unavailable.message }),
            Effect.zipRight(refuse(captchaUnavailable(unavailable.reason)))
          )
        )
      )
      if (verdict._tag === "Rejected") return yield* refuse(captchaRejected(verdict.errorCodes))
    })
  })

/** POST /signup, /otp, /magiclink, /recover and /resend. */
export const CaptchaProtectedLive = Layer.effect(CaptchaProtected, captchaGuard(() => true))

/** POST /token: every grant but the exempt ones. A repeated grant_type is no grant, so it needs a captcha too. */
export const TokenCaptchaProtectedLive = Layer.effect(
  TokenCaptchaProtected,
  captchaGuard((params) => {
    const grant = params["grant_type"]
    return grantNeedsCaptcha(typeof grant === "string" ? grant : undefined)
  })
)
