import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { ResendApi } from "./ResendApi.js"
import { RateLimits } from "../limits/RateLimits.js"
import { Resend } from "./Resend.js"

export const ResendHttpLive = HttpApiBuilder.group(ResendApi, "resend", (handlers) =>
  Effect.gen(function*() {
    const resend = yield* Resend
    const limits = yield* RateLimits
    return handlers.handle("resend", ({ payload, urlParams }) =>
      Effect.zipRight(limits.check("resend"), resend.resend({
        type: payload.type,
        email: payload.email,
        phone: payload.phone,
        redirectTo: urlParams.redirect_to,
        codeChallenge: payload.code_challenge,
        codeChallengeMethod: payload.code_challenge_method
      })))
  }))
