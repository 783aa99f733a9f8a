import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AuthErrors } from "../http/AuthErrors.js"
import { CurrentAdmin } from "./CurrentAdmin.js"

/** A JWT whose role is an admin role, such as the service_role key `node dist/main.js keys` prints. */
const AdminToken = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(OpenApi.Format, "JWT"),
  HttpApiSecurity.annotate(OpenApi.Description, "A JWT whose `role` claim is in JWT_ADMIN_ROLES, such as the service_role key")
)

/** GoTrue's requireAdminCredentials: a valid bearer JWT whose `role` is in JWT_ADMIN_ROLES; `sub` is not checked. */
const AdminRefusals = Schema.Union(
  AuthErrors.invalid(401, ["no_authorization"]),
  AuthErrors.refused(403, ["bad_jwt", "not_admin", "session_expired"])
)

export class AdminAuthenticated extends HttpApiMiddleware.Tag<AdminAuthenticated>()("auth/AdminAuthenticated", {
  failure: AdminRefusals,
  provides: CurrentAdmin,
  security: { serviceRole: AdminToken }
}) {}

/** The same, for /invite: the spec lets the service role invite even when JWT_ADMIN_ROLES leaves it out. */
export class InviterAuthenticated extends HttpApiMiddleware.Tag<InviterAuthenticated>()("auth/InviterAuthenticated", {
  failure: AdminRefusals,
  provides: CurrentAdmin,
  security: { serviceRole: AdminToken }
}) {}
