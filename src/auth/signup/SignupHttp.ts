import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { withSessionHeaders } from "../http/SessionHeaders.js"
import { RateLimits } from "../limits/RateLimits.js"
import { Signup } from "./Signup.js"
import { SignupApi } from "./SignupApi.js"

export const SignupHttpLive = HttpApiBuilder.group(SignupApi, "signup", (handlers) =>
  Effect.gen(function*() {
    const signup = yield* Signup
    const limits = yield* RateLimits
    return handlers.handle("signup", ({ payload, urlParams }) =>
      Effect.zipRight(limits.checkSignup(payload), withSessionHeaders(signup.signup({
        email: payload.email,
        phone: payload.phone,
        password: payload.password,
        data: payload.data,
        channel: payload.channel,
        redirectTo: urlParams.redirect_to,
        codeChallenge: payload.code_challenge,
        codeChallengeMethod: payload.code_challenge_method
      }))))
  }))
