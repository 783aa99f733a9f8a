import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { Authenticated } from "../contract/Authenticated.js"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { absent, PKCE_FORMATS, PKCE_PAIRED, requiring } from "../contract/BodyRules.js"
import { RateLimited, SendsMail, SendsText } from "../contract/CommonRefusals.js"
import { InputString, OptionalEmail, OptionalObject, OptionalPhone, OptionalString, RedirectParam } from "../contract/InputSchemas.js"
import { User } from "../contract/User.js"
import { AuthErrors } from "../http/AuthErrors.js"

export const UserUpdatePayload = requiring(Schema.Struct({
  email: OptionalEmail,
  phone: OptionalPhone,
  password: OptionalString,
  nonce: OptionalString,
  current_password: OptionalString,
  data: OptionalObject,
  app_metadata: OptionalObject,
  channel: Schema.optional(Schema.NullOr(InputString.annotations({
    description: "How a phone change's code is sent: `sms` (also when empty or absent) or `whatsapp` (Twilio only; otherwise 400 validation_failed). Not read without a new phone"
  }))),
  code_challenge: OptionalString,
  code_challenge_method: OptionalString
}), {
  description: "PKCE belongs to an email change: `code_challenge` and `code_challenge_method` are read (both or " +
    "neither, well formed) only with an `email` other than the user's own, and ignored otherwise, as in GoTrue.",
  anyOf: [absent("email"), { allOf: [PKCE_PAIRED, PKCE_FORMATS] }]
})

export class ProfileGroup extends HttpApiGroup.make("profile")
  .add(
    HttpApiEndpoint.get("getUser", "/user").addSuccess(User)
      .addError(AuthErrors.refused(400, ["validation_failed"], "An X-JWT-AUD that differs from the token's audience is 400, as in GoTrue."))
  )
  .add(
    HttpApiEndpoint.put("updateUser", "/user")
      .setPayload(UserUpdatePayload)
      .setUrlParams(RedirectParam)
      .addSuccess(User)
      .addError(AuthErrors.refused(400, ["reauthentication_needed", "validation_failed"]))
      .addError(AuthErrors.refused(403, ["not_admin"], "app_metadata is for admins."))
      .addError(AuthErrors.refused(422, ["reauthentication_not_valid", "same_password", "email_exists", "phone_exists", "weak_password", "validation_failed"],
        "GoTrue answers 422 for an address already taken or a password the policy refuses, where a strict reading of HTTP would say 409."))
      .addError(SendsMail)
      .addError(SendsText)
      .addError(RateLimited)
  )
  .add(
    HttpApiEndpoint.get("reauthenticate", "/reauthenticate").addSuccess(Schema.Struct({}))
      .addError(AuthErrors.refused(422, ["validation_failed", "email_not_confirmed", "phone_not_confirmed"]))
      .addError(SendsMail)
      .addError(SendsText)
  )
  .middleware(Authenticated)
  .annotate(OpenApi.Title, "Profile")
  .annotate(OpenApi.Description, "The signed-in user: each call needs `Authorization: Bearer <access token>`") {}

/** The profile slice on its own: what its handlers are built against (Api.ts composes ProfileGroup into AuthApi). */
export const ProfileApi = AuthApiBase.add(ProfileGroup)
