import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { AuthApi } from "../Api.js"
import { AuthError } from "../domain/AuthError.js"
import { Accounts } from "./Accounts.js"

export const AccountsHttpLive = HttpApiBuilder.group(AuthApi, "accounts", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    return handlers
      .handle("signup", ({ payload, urlParams }) =>
        accounts.signup({
          email: payload.email,
          phone: payload.phone,
          password: payload.password,
          data: payload.data,
          redirectTo: urlParams.redirect_to
        }))
      .handle("token", ({ payload, urlParams }) => {
        switch (urlParams.grant_type) {
          case "password":
            return accounts.passwordGrant(payload)
          case "refresh_token":
            return accounts.refreshGrant(payload.refresh_token ?? "")
          default:
            // GoTrue's answer, code and all, for any grant it does not handle.
            return Effect.fail(AuthError.of(400, "invalid_credentials", "unsupported_grant_type"))
        }
      })
  }))
