import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { AuthApi } from "../Api.js"
import { Recover } from "./Recover.js"

export const RecoverHttpLive = HttpApiBuilder.group(AuthApi, "recover", (handlers) =>
  Effect.gen(function*() {
    const recover = yield* Recover
    return handlers.handle("recover", ({ payload, urlParams }) =>
      Effect.as(recover.recover({
        email: payload.email,
        redirectTo: urlParams.redirect_to,
        codeChallenge: payload.code_challenge,
        codeChallengeMethod: payload.code_challenge_method
      }), {}))
  }))
