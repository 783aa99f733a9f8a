import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import { AuthConfig } from "../../config/AuthConfig.js"
import { CurrentUser } from "../contract/CurrentUser.js"
import { ProfileApi } from "./ProfileApi.js"
import { AuthError } from "../domain/AuthError.js"
import { encodedResponse } from "../http/EncodedResponse.js"
import { RateLimits } from "../limits/RateLimits.js"
import { Profile } from "./Profile.js"

export const ProfileHttpLive = HttpApiBuilder.group(ProfileApi, "profile", (handlers) =>
  Effect.gen(function*() {
    const profile = yield* Profile
    const config = yield* AuthConfig
    const limits = yield* RateLimits
    return handlers
      .handle("getUser", () =>
        Effect.gen(function*() {
          const { claims, factors, identities, user } = yield* CurrentUser
          const request = yield* HttpServerRequest.HttpServerRequest
          // GoTrue's requestAud: the X-JWT-AUD header, else the configured audience.
          const wanted = request.headers["x-jwt-aud"] ?? config.jwt.aud
          if (claims["aud"] !== wanted) {
            return yield* AuthError.validation("Token audience doesn't match request audience")
          }
          return encodedResponse(yield* profile.get(user, identities, factors))
        }))
      .handle("updateUser", ({ payload, urlParams }) =>
        Effect.gen(function*() {
          const caller = yield* CurrentUser
          yield* limits.check("user")
          return yield* profile.update(caller, {
            email: payload.email,
            phone: payload.phone,
            password: payload.password,
            nonce: payload.nonce,
            data: payload.data,
            appMetadata: payload.app_metadata,
            redirectTo: urlParams.redirect_to,
            codeChallenge: payload.code_challenge,
            codeChallengeMethod: payload.code_challenge_method,
            channel: payload.channel
          })
        }))
      .handle("reauthenticate", () =>
        Effect.flatMap(CurrentUser, ({ user }) => Effect.as(profile.reauthenticate(user), {})))
  }))
