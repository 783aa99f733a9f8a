import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { RateLimits } from "../limits/RateLimits.js"
import { Recover } from "./Recover.js"
import { RecoverApi } from "./RecoverApi.js"

export const RecoverHttpLive = HttpApiBuilder.group(RecoverApi, "recover", (handlers) =>
  Effect.gen(function*() {
    const recover = yield* Recover
    const limits = yield* RateLimits
    return handlers.handle("recover", ({ payload, urlParams }) =>
      Effect.zipRight(limits.check("recover"), Effect.as(recover.recover({
        email: payload.email,
        redirectTo: urlParams.redirect_to,
        codeChallenge: payload.code_challenge,
        codeChallengeMethod: payload.code_challenge_method
      }), {})))
  }))
