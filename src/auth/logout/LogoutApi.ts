import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { Authenticated } from "../contract/Authenticated.js"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { OneOf, QueryParams } from "../contract/InputSchemas.js"
import { AuthErrors } from "../http/AuthErrors.js"
import { LOGOUT_SCOPES } from "../sessions/Sessions.js"

export class LogoutGroup extends HttpApiGroup.make("logout")
  .add(
    HttpApiEndpoint.post("logout", "/logout")
      .setUrlParams(QueryParams({ scope: Schema.optional(OneOf(LOGOUT_SCOPES, "Default global")) }))
      .addSuccess(Schema.Void, { status: 204 })
      .addError(AuthErrors.invalid(400, ["validation_failed"]))
  )
  .middleware(Authenticated)
  .annotate(OpenApi.Title, "Logout")
  .annotate(OpenApi.Description, "Ends the caller's sessions: needs `Authorization: Bearer <access token>`") {}

/** The logout slice on its own: what its handlers are built against (Api.ts composes LogoutGroup into AuthApi). */
export const LogoutApi = AuthApiBase.add(LogoutGroup)
