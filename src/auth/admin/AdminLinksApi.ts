import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AdminAuthenticated } from "../contract/AdminAuthenticated.js"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { present, requiring, typed } from "../contract/BodyRules.js"
import { EMAIL_FORMAT, InputString, OneOf, OptionalEmail, OptionalObject, OptionalString, RedirectParam } from "../contract/InputSchemas.js"
import { User } from "../contract/User.js"
import { AuthErrors } from "../http/AuthErrors.js"

/** The kinds of link POST /admin/generate_link makes (GenerateLink reads the same list). */
export const LINK_KINDS = ["signup", "invite", "magiclink", "recovery", "email_change_current", "email_change_new"] as const


export const GenerateLinkPayload = requiring(
  Schema.Struct({
    type: Schema.optional(Schema.NullOr(OneOf(LINK_KINDS))),
    email: OptionalEmail,
    new_email: Schema.optional(Schema.NullOr(InputString.annotations({ description: "The new address, read for the email_change types only" }))),
    password: OptionalString,
    data: OptionalObject,
    redirect_to: OptionalString
  }),
  present("type", "email"),
  {
    anyOf: [
      typed(["invite", "magiclink", "recovery"], present()),
      typed(["signup"], present("password")),
      { ...typed(["email_change_current", "email_change_new"], present("new_email")), allOf: [{ properties: { new_email: EMAIL_FORMAT } }] }
    ]
  }
)

/** /admin/generate_link's answer: the user's fields, flattened, beside the link and its parts (auth-js splits them). */
export class GeneratedLink extends Schema.Class<GeneratedLink>("GeneratedLink")({
  ...User.fields,
  action_link: Schema.String,
  email_otp: Schema.String,
  hashed_token: Schema.String,
  verification_type: Schema.String,
  redirect_to: Schema.String
}) {}

export class AdminLinksGroup extends HttpApiGroup.make("adminLinks")
  .add(
    HttpApiEndpoint.post("generateLink", "/admin/generate_link")
      .setPayload(GenerateLinkPayload)
      .setUrlParams(RedirectParam)
      .addSuccess(GeneratedLink)
      .addError(AuthErrors.refused(400, ["validation_failed"]))
      .addError(AuthErrors.refused(404, ["user_not_found"]))
      .addError(AuthErrors.refused(422, ["email_exists", "weak_password"],
        "GoTrue answers 422 for an address already registered, where a strict reading of HTTP would say 409."))
  )
  .middleware(AdminAuthenticated)
  .annotate(OpenApi.Title, "Admin: links")
  .annotate(
    OpenApi.Description,
    "Makes the link and code of a sign-up, invite, magic link, recovery or email change without mailing it: needs `Authorization: Bearer <admin JWT>`"
  ) {}

/** The admin links slice on its own: what its handlers are built against (Api.ts composes AdminLinksGroup into AuthApi). */
export const AdminLinksApi = AuthApiBase.add(AdminLinksGroup)
