import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { CurrentUser } from "../contract/CurrentUser.js"
import { LogoutApi } from "./LogoutApi.js"
import { AuthError } from "../domain/AuthError.js"
import { LOGOUT_SCOPES, type LogoutScope, Sessions } from "../sessions/Sessions.js"
import { AuditLog } from "../users/AuditLog.js"

const isScope = (value: string): value is LogoutScope => (LOGOUT_SCOPES as ReadonlyArray<string>).includes(value)

/** POST /logout: ending sessions is the sessions floor's job, so this feature is its handler alone. */
export const LogoutHttpLive = HttpApiBuilder.group(LogoutApi, "logout", (handlers) =>
  Effect.gen(function*() {
    const sessions = yield* Sessions
    const audit = yield* AuditLog
    return handlers.handle("logout", ({ urlParams }) =>
      Effect.gen(function*() {
        const { sessionId, user } = yield* CurrentUser
        const scope = urlParams.scope ?? "global"
        if (!isScope(scope)) return yield* AuthError.validation(`Unsupported logout scope "${scope.slice(0, 20)}"`)
        yield* sessions.logout(user.id, sessionId, scope)
        yield* audit.record("logout", { actor: user, traits: { scope } })
      }))
  }))
