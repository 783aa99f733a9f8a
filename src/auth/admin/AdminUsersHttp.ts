import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import { CurrentAdmin } from "../contract/CurrentAdmin.js"
import { AdminUserList, AdminUsersApi } from "./AdminUsersApi.js"
import { adminActor } from "../users/AuditLog.js"
import { pagingHeaders } from "../domain/Pagination.js"
import { AdminUsers } from "./AdminUsers.js"

/** GoTrue's requestAud for admins: the X-JWT-AUD header when sent (an admin token's own `aud` does not count). */
const requestAud = Effect.map(HttpServerRequest.HttpServerRequest, (request) => request.headers["x-jwt-aud"])

/** Who the audit log says acted: the admin token's role, as GoTrue records it. */
const actor = Effect.map(CurrentAdmin, ({ claims }) => adminActor(claims))

export const AdminUsersHttpLive = HttpApiBuilder.group(AdminUsersApi, "adminUsers", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* AdminUsers
    return handlers
      .handle("listUsers", ({ urlParams }) =>
        Effect.gen(function*() {
          const found = yield* admin.list({ aud: yield* requestAud, page: urlParams.page, perPage: urlParams.per_page, filter: urlParams.filter })
          const request = yield* HttpServerRequest.HttpServerRequest
          // The path as the client sent it (with /auth/v1 when it used that), so the links work where they are read.
          const headers = pagingHeaders(request.originalUrl, found.page, found.total)
          yield* HttpApp.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeaders(response, headers)))
          return new AdminUserList({ users: found.users, aud: found.aud })
        }))
      .handle("createUser", ({ payload }) =>
        Effect.flatMap(Effect.all([requestAud, actor]), ([aud, by]) => admin.create(payload, undefined, aud, by)))
      .handle("createUserWithId", ({ path, payload }) =>
        Effect.flatMap(Effect.all([requestAud, actor]), ([aud, by]) => admin.create(payload, path.user_id, aud, by)))
      .handle("getUser", ({ path }) => admin.get(path.user_id))
      .handle("updateUser", ({ path, payload }) => Effect.flatMap(actor, (by) => admin.update(path.user_id, payload, by)))
      .handle("deleteUser", ({ path, payload }) =>
        Effect.flatMap(actor, (by) => Effect.as(admin.remove(path.user_id, payload?.should_soft_delete === true, by), {})))
  }))
