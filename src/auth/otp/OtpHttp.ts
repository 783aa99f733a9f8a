import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { RateLimits } from "../limits/RateLimits.js"
import { Otp } from "./Otp.js"
import { OtpApi } from "./OtpApi.js"

export const OtpHttpLive = HttpApiBuilder.group(OtpApi, "otp", (handlers) =>
  Effect.gen(function*() {
    const otp = yield* Otp
    const limits = yield* RateLimits
    return handlers
      .handle("otp", ({ payload, urlParams }) =>
        Effect.zipRight(limits.check("otp"), otp.otp({
          email: payload.email,
          phone: payload.phone,
          createUser: payload.create_user,
          data: payload.data,
          channel: payload.channel,
          redirectTo: urlParams.redirect_to,
          codeChallenge: payload.code_challenge,
          codeChallengeMethod: payload.code_challenge_method
        })))
      .handle("magiclink", ({ payload, urlParams }) =>
        Effect.zipRight(limits.check("magiclink"), otp.magiclink({
          email: payload.email,
          data: payload.data,
          redirectTo: urlParams.redirect_to,
          codeChallenge: payload.code_challenge,
          codeChallengeMethod: payload.code_challenge_method
        })))
  }))
