import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AdminAuthenticated } from "../contract/AdminAuthenticated.js"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { documented, QueryParams } from "../contract/InputSchemas.js"
import { JsonObject } from "../contract/JsonObject.js"
import { Timestamp } from "../contract/Timestamp.js"
import { AuthErrors } from "../http/AuthErrors.js"
import { PageParam, PerPageParam } from "./PageParams.js"

/** An audit_log_entries row as GET /admin/audit lists it: GoTrue's JSON, which leaves instance_id out. */
export class AuditEntry extends Schema.Class<AuditEntry>("AuditEntry")({
  id: Schema.String,
  payload: JsonObject.annotations({ description: "{actor_id, actor_username, actor_name?, actor_via_sso, action, log_type, traits?}" }),
  created_at: Timestamp,
  ip_address: Schema.String
}) {}

export class AdminAuditGroup extends HttpApiGroup.make("adminAudit")
  .add(
    HttpApiEndpoint.get("auditLog", "/admin/audit")
      .setUrlParams(QueryParams({
        page: PageParam,
        per_page: PerPageParam,
        query: Schema.optional(documented(
          // Any text after the prefix, line breaks included, but no NUL (PostgreSQL could not compare it).
          { pattern: "^((author|action|type):[^\\u0000]*)?$" },
          "`author:<text>`, `action:<text>` or `type:<text>`, matched case-insensitively anywhere in the field"
        ))
      }))
      .addSuccess(Schema.Array(AuditEntry))
      .addError(AuthErrors.invalid(400, ["validation_failed"]))
  )
  .middleware(AdminAuthenticated)
  .annotate(OpenApi.Title, "Admin: audit log")
  .annotate(OpenApi.Description, "The audit log, newest first, with `Link` and `X-Total-Count` paging headers: needs `Authorization: Bearer <admin JWT>`") {}

/** The audit log slice on its own: what its handlers are built against (Api.ts composes AdminAuditGroup into AuthApi). */
export const AdminAuditApi = AuthApiBase.add(AdminAuditGroup)
