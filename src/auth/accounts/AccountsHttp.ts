import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { AuthApi } from "../Api.js"
import { AuthError } from "../domain/AuthError.js"
import { withSessionHeaders } from "../http/SessionHeaders.js"
import { Accounts } from "./Accounts.js"

export const AccountsHttpLive = HttpApiBuilder.group(AuthApi, "accounts", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    return handlers
      .handle("signup", ({ payload, urlParams }) =>
        withSessionHeaders(accounts.signup({
          email: payload.email,
          phone: payload.phone,
          password: payload.password,
          data: payload.data,
          redirectTo: urlParams.redirect_to
        })))
      .handle("token", ({ payload, urlParams }) => {
        switch (urlParams.grant_type) {
          case "password":
            return withSessionHeaders(accounts.passwordGrant(payload))
          case "refresh_token":
            return withSessionHeaders(accounts.refreshGrant(payload.refresh_token ?? ""))
          default:
            // GoTrue's answer, code and all, for any grant it does not handle.
            return Effect.fail(AuthError.of(400, "invalid_credentials", "unsupported_grant_type"))
        }
      })
  }))
