import { HttpApiBuilder, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { AdminUserList, AuthApi } from "../Api.js"
import { linkHeader } from "../domain/Pagination.js"
import { AdminUsers } from "./AdminUsers.js"

export const AdminUsersHttpLive = HttpApiBuilder.group(AuthApi, "adminUsers", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* AdminUsers
    return handlers
      .handle("listUsers", ({ urlParams }) =>
        Effect.gen(function*() {
          const found = yield* admin.list({ page: urlParams.page, perPage: urlParams.per_page, filter: urlParams.filter })
          const request = yield* HttpServerRequest.HttpServerRequest
          // The path as the client sent it (with /auth/v1 when it used that), so the links work where they are read.
          const url = new URL(request.originalUrl, "http://gatehouse.invalid")
          const headers = {
            "x-total-count": String(found.total),
            link: linkHeader(url.pathname, [...url.searchParams.entries()], found.page, found.total)
          }
          yield* HttpApp.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeaders(response, headers)))
          return new AdminUserList({ users: found.users, aud: found.aud })
        }))
      .handle("createUser", ({ payload }) => admin.create(payload, undefined))
      .handle("createUserWithId", ({ path, payload }) => admin.create(payload, path.user_id))
      .handle("getUser", ({ path }) => admin.get(path.user_id))
      .handle("updateUser", ({ path, payload }) => admin.update(path.user_id, payload))
      .handle("deleteUser", ({ path, payload }) => Effect.as(admin.remove(path.user_id, payload?.should_soft_delete === true), {}))
      // Until MFA exists a user has no factors: an empty list, not a 404, so dashboards and auth-js keep working.
      .handle("listFactors", () => Effect.succeed([]))
  }))
