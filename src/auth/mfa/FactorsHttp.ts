import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { clientHeaderName, requestClientIp } from "../../platform/http/RateLimitKey.js"
import { CurrentUser } from "../contract/CurrentUser.js"
import { withSessionHeaders } from "../http/SessionHeaders.js"
import { RateLimits } from "../limits/RateLimits.js"
import { FactorsApi } from "./FactorsApi.js"
import { Mfa } from "./Mfa.js"

export const FactorsHttpLive = HttpApiBuilder.group(FactorsApi, "factors", (handlers) =>
  Effect.gen(function*() {
    const mfa = yield* Mfa
    const limits = yield* RateLimits
    const header = clientHeaderName((yield* PlatformConfig).api.clientHeader)

    /** The client a challenge is bound to (mfa_challenges.ip_address): the audit log's client, as an address. */
    const callerIp = Effect.map(HttpServerRequest.HttpServerRequest, (request) => requestClientIp(request, header))

    return handlers
      .handle("enroll", ({ payload }) =>
        Effect.gen(function*() {
          const answer = yield* mfa.enroll(yield* CurrentUser, {
            factorType: payload.factor_type ?? "",
            friendlyName: payload.friendly_name ?? "",
            issuer: payload.issuer ?? "",
            phone: payload.phone ?? ""
          })
          // The kind's keys are answered as it made them (their shapes are the kind's).
          return HttpServerResponse.unsafeJson(answer)
        }))
      .handle("challenge", ({ path, payload }) =>
        Effect.gen(function*() {
          const caller = yield* CurrentUser
          const factor = yield* mfa.load(caller, path.factor_id)
          yield* limits.check("factor_challenge")
          const body = payload === null ? null : { channel: payload.channel, webauthn: payload.webauthn }
          return HttpServerResponse.unsafeJson(yield* mfa.challenge(caller, factor, body, yield* callerIp))
        }))
      .handle("verify", ({ path, payload }) =>
        Effect.gen(function*() {
          const caller = yield* CurrentUser
          const factor = yield* mfa.load(caller, path.factor_id)
          yield* limits.check("factor_verify")
          const request = { challengeId: payload.challenge_id ?? "", code: payload.code ?? "", webauthn: payload.webauthn }
          return yield* withSessionHeaders(mfa.verify(caller, factor, request, yield* callerIp))
        }))
      .handle("unenroll", ({ path }) =>
        Effect.gen(function*() {
          const caller = yield* CurrentUser
          return yield* mfa.unenroll(caller, yield* mfa.load(caller, path.factor_id))
        }))
  }))
