import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { AuthApi } from "../Api.js"
import { withSessionHeaders } from "../http/SessionHeaders.js"
import { Verify } from "./Verify.js"

export const VerifyHttpLive = HttpApiBuilder.group(AuthApi, "verify", (handlers) =>
  Effect.gen(function*() {
    const verify = yield* Verify
    return handlers
      .handle("verify", ({ payload }) => withSessionHeaders(verify.verify(payload)))
      .handle("verifyLink", ({ urlParams }) =>
        Effect.map(
          verify.verifyLink({ token: urlParams.token, type: urlParams.type, redirectTo: urlParams.redirect_to }),
          (location) => HttpServerResponse.redirect(location, { status: 303 })
        ))
  }))
