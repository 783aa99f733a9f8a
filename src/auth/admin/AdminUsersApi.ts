import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AdminAuthenticated } from "../contract/AdminAuthenticated.js"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { InputString, OptionalEmail, OptionalObject, OptionalPhone, OptionalString, QueryParams } from "../contract/InputSchemas.js"
import { User } from "../contract/User.js"
import { AuthErrors } from "../http/AuthErrors.js"
import { PageParam, PerPageParam } from "./PageParams.js"

const UserIdParam = Schema.Struct({ user_id: InputString })
const OptionalBoolean = Schema.optional(Schema.NullOr(Schema.Boolean))

/** POST /admin/users[/{user_id}] and PUT /admin/users/{user_id} (reference §2.16): every field optional. */
export const AdminUserPayload = Schema.Struct({
  id: OptionalString,
  aud: OptionalString,
  role: OptionalString,
  email: OptionalEmail,
  phone: OptionalPhone,
  password: OptionalString,
  password_hash: OptionalString,
  email_confirm: OptionalBoolean,
  phone_confirm: OptionalBoolean,
  user_metadata: OptionalObject,
  app_metadata: OptionalObject,
  ban_duration: OptionalString.annotations({ description: "A Go duration (\"24h\", \"1h30m\"; units ns, us, ms, s, m, h), or \"none\" to lift a ban" })
})

/** DELETE /admin/users/{user_id}: the body is optional (an empty one reads as null). */
export const AdminUserDeletePayload = Schema.NullOr(Schema.Struct({ should_soft_delete: OptionalBoolean }))

export class AdminUserList extends Schema.Class<AdminUserList>("AdminUserList")({
  users: Schema.Array(User),
  aud: Schema.String
}) {}

const AdminUserRefusals = Schema.Union(
  AuthErrors.refused(400, ["validation_failed"]),
  AuthErrors.refused(422, ["email_exists", "phone_exists", "user_already_exists", "weak_password"],
    "GoTrue answers 422 for an address already registered or a password the policy refuses, where a strict reading of HTTP would say 409.")
)
const NoSuchUser = AuthErrors.refused(404, ["user_not_found", "validation_failed"], "A user_id that is not a UUID is 404 `validation_failed`, as in GoTrue.")

export class AdminUsersGroup extends HttpApiGroup.make("adminUsers")
  .add(
    HttpApiEndpoint.get("listUsers", "/admin/users")
      .setUrlParams(QueryParams({
        page: PageParam,
        per_page: PerPageParam,
        filter: Schema.optional(InputString.annotations({ description: "Part of the email, phone or user_metadata.full_name, in any case" }))
      }))
      .addSuccess(AdminUserList)
      .addError(AuthErrors.invalid(400, ["validation_failed"]))
      .annotate(OpenApi.Description, "Newest first; `X-Total-Count` and a `Link` header (rel next and last) as GoTrue sends them")
  )
  .add(HttpApiEndpoint.post("createUser", "/admin/users").setPayload(AdminUserPayload).addSuccess(User).addError(AdminUserRefusals))
  .add(
    HttpApiEndpoint.post("createUserWithId", "/admin/users/:user_id").setPath(UserIdParam).setPayload(AdminUserPayload).addSuccess(User)
      .addError(AdminUserRefusals)
  )
  .add(HttpApiEndpoint.get("getUser", "/admin/users/:user_id").setPath(UserIdParam).addSuccess(User).addError(NoSuchUser))
  .add(
    HttpApiEndpoint.put("updateUser", "/admin/users/:user_id").setPath(UserIdParam).setPayload(AdminUserPayload).addSuccess(User)
      .addError(NoSuchUser)
      .addError(AdminUserRefusals)
  )
  .add(
    HttpApiEndpoint.del("deleteUser", "/admin/users/:user_id")
      .setPath(UserIdParam)
      .setPayload(AdminUserDeletePayload)
      .addSuccess(Schema.Struct({}))
      .addError(NoSuchUser)
  )
  .middleware(AdminAuthenticated)
  .annotate(OpenApi.Title, "Admin: users")
  .annotate(OpenApi.Description, "User management: each call needs `Authorization: Bearer <admin JWT>` (the service_role key)") {}

/** The admin users slice on its own: what its handlers are built against (Api.ts composes AdminUsersGroup into AuthApi). */
export const AdminUsersApi = AuthApiBase.add(AdminUsersGroup)
