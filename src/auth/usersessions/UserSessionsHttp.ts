import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { CurrentAdmin } from "../contract/CurrentAdmin.js"
import { CurrentUser } from "../contract/CurrentUser.js"
import { adminActor } from "../users/AuditLog.js"
import { UserSessions } from "../sessions/UserSessions.js"
import { UserSessionsApi } from "./UserSessionsApi.js"

export const UserSessionsHttpLive = HttpApiBuilder.group(UserSessionsApi, "userSessions", (handlers) =>
  Effect.gen(function*() {
    const service = yield* UserSessions
    return handlers
      .handle("listSessions", () => Effect.flatMap(CurrentUser, ({ sessionId, user }) => service.own(user.id, sessionId)))
      .handle("endSession", ({ path }) => Effect.flatMap(CurrentUser, ({ sessionId, user }) => service.endOwn(user, sessionId, path.session_id)))
  }))

export const AdminSessionsHttpLive = HttpApiBuilder.group(UserSessionsApi, "adminSessions", (handlers) =>
  Effect.gen(function*() {
    const service = yield* UserSessions
    return handlers
      .handle("listUserSessions", ({ path }) => service.ofUser(path.user_id))
      .handle("endUserSessions", ({ path }) =>
        Effect.flatMap(CurrentAdmin, ({ claims }) => service.endAllOfUser(path.user_id, adminActor(claims))))
  }))
