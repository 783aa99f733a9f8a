import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import { withSessionHeaders } from "../http/SessionHeaders.js"
import { RateLimits } from "../limits/RateLimits.js"
import { Verify } from "./Verify.js"
import { VerifyApi } from "./VerifyApi.js"

export const VerifyHttpLive = HttpApiBuilder.group(VerifyApi, "verify", (handlers) =>
  Effect.gen(function*() {
    const verify = yield* Verify
    const limits = yield* RateLimits
    // What a guessable attempt costs this request's client.
    const guess = Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
      Effect.provideService(limits.chargeGuess(), HttpServerRequest.HttpServerRequest, request))
    return handlers
      .handle("verify", ({ payload }) =>
        Effect.zipRight(limits.check("verify"), Effect.flatMap(guess, (charge) => withSessionHeaders(verify.verify(payload, charge)))))
      .handle("verifyLink", ({ urlParams }) =>
        Effect.map(
          Effect.zipRight(
            limits.check("verify"),
            Effect.flatMap(guess, (charge) =>
              verify.verifyLink({ token: urlParams.token, type: urlParams.type, redirectTo: urlParams.redirect_to }, charge))
          ),
          (location) => HttpServerResponse.redirect(location, { status: 303 })
        ))
  }))
