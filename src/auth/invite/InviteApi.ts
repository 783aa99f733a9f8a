import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { InviterAuthenticated } from "../contract/AdminAuthenticated.js"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { present, requiring } from "../contract/BodyRules.js"
import { SendsMail } from "../contract/CommonRefusals.js"
import { OptionalEmail, OptionalObject, RedirectParam } from "../contract/InputSchemas.js"
import { User } from "../contract/User.js"
import { AuthErrors } from "../http/AuthErrors.js"

export const InvitePayload = requiring(Schema.Struct({ email: OptionalEmail, data: OptionalObject }), present("email"))

export class InviteGroup extends HttpApiGroup.make("invite")
  .add(
    HttpApiEndpoint.post("invite", "/invite")
      .setPayload(InvitePayload)
      .setUrlParams(RedirectParam)
      .addSuccess(User)
      .addError(AuthErrors.refused(400, ["validation_failed"]))
      .addError(AuthErrors.refused(422, ["email_exists"], "GoTrue answers 422 for an address already registered, where a strict reading of HTTP would say 409."))
      .addError(SendsMail)
  )
  .middleware(InviterAuthenticated)
  .annotate(OpenApi.Title, "Invite")
  .annotate(OpenApi.Description, "Mails an invitation that confirms the address and signs in: needs `Authorization: Bearer <admin or service_role JWT>`") {}

/** The invite slice on its own: what its handlers are built against (Api.ts composes InviteGroup into AuthApi). */
export const InviteApi = AuthApiBase.add(InviteGroup)
