import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import { AuthConfig } from "../../config/AuthConfig.js"
import { chooseLocale } from "../../domain/MessageLocale.js"
import { AuthError } from "../domain/AuthError.js"
import { withSessionHeaders } from "../http/SessionHeaders.js"
import { RateLimits } from "../limits/RateLimits.js"
import { BUILT_IN_TEXTS } from "../messages/BuiltInTexts.js"
import { confirmFormAction, type ConfirmFields, confirmPage, confirmPageHeaders } from "./ConfirmPage.js"
import { Verify } from "./Verify.js"
import { VerifyApi } from "./VerifyApi.js"

export const VerifyHttpLive = HttpApiBuilder.group(VerifyApi, "verify", (handlers) =>
  Effect.gen(function*() {
    const verify = yield* Verify
    const limits = yield* RateLimits
    const config = yield* AuthConfig
    // What a guessable attempt costs this request's client.
    const guess = Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
      Effect.provideService(limits.chargeGuess(), HttpServerRequest.HttpServerRequest, request))

    /** What GET /verify always did, and POST /verify/confirm does: spend the link, and send the browser on. */
    const spendLink = (fields: ConfirmFields) =>
      Effect.map(
        Effect.zipRight(
          limits.check("verify"),
          Effect.flatMap(guess, (charge) => verify.verifyLink({ token: fields.token, type: fields.type, redirectTo: fields.redirect_to }, charge))
        ),
        (location) => HttpServerResponse.redirect(location, { status: 303 })
      )

    /**
     * The confirm page, in the language the browser asks for (nobody is known before the link is spent), posting
     * under the prefix it was asked for. It reads nothing and writes nothing, so it costs no rate limit either.
     */
    const pageFor = (fields: ConfirmFields) =>
      Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
        const locale = chooseLocale(config.mailer.localization.offer, { acceptLanguage: request.headers["accept-language"] })
        const path = new URL(request.originalUrl, "http://gatehouse.invalid").pathname
        return HttpServerResponse.text(confirmPage(BUILT_IN_TEXTS[locale].confirmPage, locale, confirmFormAction(path), fields), {
          contentType: "text/html; charset=utf-8",
          headers: confirmPageHeaders(verify.redirectTarget(fields.redirect_to))
        })
      })

    return handlers
      .handle("verify", ({ payload }) =>
        Effect.zipRight(limits.check("verify"), Effect.flatMap(guess, (charge) => withSessionHeaders(verify.verify(payload, charge)))))
      .handle("verifyLink", ({ urlParams }) => config.mailer.linkConfirmPage ? pageFor(urlParams) : spendLink(urlParams))
      .handle("confirmLink", ({ payload }) =>
        config.mailer.linkConfirmPage ? spendLink(payload) : Effect.fail(AuthError.of(404, "feature_disabled", "Link confirmation page is disabled")))
  }))
