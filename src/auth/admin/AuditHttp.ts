import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { AuditEntry, AdminAuditApi } from "./AdminAuditApi.js"
import { AuthError } from "../domain/AuthError.js"
import { pagingHeaders, parsePage } from "../domain/Pagination.js"
import { AuditLogRepo, parseAuditQuery } from "../users/AuditLogRepo.js"

/** GET /admin/audit (GoTrue's adminAuditLog): a page of the audit log as a bare array, newest first. */
export const AuditHttpLive = HttpApiBuilder.group(AdminAuditApi, "adminAudit", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* AuditLogRepo
    return handlers.handle("auditLog", ({ urlParams }) =>
      Effect.gen(function*() {
        const paging = yield* Either.mapLeft(parsePage(urlParams.page, urlParams.per_page), AuthError.validation)
        const query = yield* Either.mapLeft(parseAuditQuery(urlParams.query), AuthError.validation)
        const { entries, total } = yield* repo.page(paging.page, paging.perPage, query)
        const request = yield* HttpServerRequest.HttpServerRequest
        const headers = pagingHeaders(request.originalUrl, paging, total)
        yield* HttpApp.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeaders(response, headers)))
        return entries.map((entry) =>
          new AuditEntry({
            id: entry.id,
            payload: entry.payload,
            created_at: entry.created_at.toISOString(),
            ip_address: entry.ip_address
          }))
      }))
  }))
