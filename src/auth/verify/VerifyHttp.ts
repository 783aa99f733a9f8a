import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { AuthApi } from "../Api.js"
import { withSessionHeaders } from "../http/SessionHeaders.js"
import { RateLimits } from "../limits/RateLimits.js"
import { Verify } from "./Verify.js"

export const VerifyHttpLive = HttpApiBuilder.group(AuthApi, "verify", (handlers) =>
  Effect.gen(function*() {
    const verify = yield* Verify
    const limits = yield* RateLimits
    return handlers
      .handle("verify", ({ payload }) => Effect.zipRight(limits.check("verify"), withSessionHeaders(verify.verify(payload))))
      .handle("verifyLink", ({ urlParams }) =>
        Effect.map(
          Effect.zipRight(limits.check("verify"), verify.verifyLink({ token: urlParams.token, type: urlParams.type, redirectTo: urlParams.redirect_to })),
          (location) => HttpServerResponse.redirect(location, { status: 303 })
        ))
  }))
