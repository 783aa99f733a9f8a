import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AdminAuthenticated } from "../contract/AdminAuthenticated.js"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { Factor } from "../contract/Factor.js"
import { InputString, OptionalString } from "../contract/InputSchemas.js"
import { AuthErrors } from "../http/AuthErrors.js"

const UserIdParam = Schema.Struct({ user_id: InputString })
const UserFactorParams = Schema.Struct({ user_id: InputString, factor_id: InputString })

/** PUT /admin/users/{user_id}/factors/{factor_id}: empty fields are left as they are. */
export const AdminFactorPayload = Schema.Struct({
  friendly_name: OptionalString,
  phone: Schema.optional(Schema.NullOr(InputString.annotations({ description: "Phone factors only (ignored on others): E.164" })))
})

const NoSuchUser = AuthErrors.refused(404, ["user_not_found", "validation_failed"], "A user_id that is not a UUID is 404 `validation_failed`, as in GoTrue.")
const NoSuchFactor = AuthErrors.refused(404, ["user_not_found", "validation_failed", "mfa_factor_not_found"],
  "A user_id or factor_id that is not a UUID is 404 `validation_failed`, as in GoTrue.")

export class AdminFactorsGroup extends HttpApiGroup.make("adminFactors")
  .add(
    HttpApiEndpoint.get("listFactors", "/admin/users/:user_id/factors")
      .setPath(UserIdParam)
      .addSuccess(Schema.Array(Factor))
      .addError(NoSuchUser)
      .annotate(OpenApi.Description, "The user's factors, unverified ones too, oldest first")
  )
  .add(
    HttpApiEndpoint.put("updateFactor", "/admin/users/:user_id/factors/:factor_id")
      .setPath(UserFactorParams)
      .setPayload(AdminFactorPayload)
      .addSuccess(Factor)
      .addError(NoSuchFactor)
      .addError(AuthErrors.invalid(400, ["validation_failed"]))
  )
  .add(
    HttpApiEndpoint.del("deleteFactor", "/admin/users/:user_id/factors/:factor_id")
      .setPath(UserFactorParams)
      .addSuccess(Factor)
      .addError(NoSuchFactor)
      .annotate(OpenApi.Description, "Removes the factor (no aal needed) and answers it; the sessions it raised fall back to aal1")
  )
  .middleware(AdminAuthenticated)
  .annotate(OpenApi.Title, "Admin: factors")
  .annotate(OpenApi.Description, "A user's second factors: each call needs `Authorization: Bearer <admin JWT>` (the service_role key)") {}

/** The admin factors slice on its own: what its handlers are built against (Api.ts composes AdminFactorsGroup into AuthApi). */
export const AdminFactorsApi = AuthApiBase.add(AdminFactorsGroup)
