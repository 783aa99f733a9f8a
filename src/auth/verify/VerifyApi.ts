import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { present, requiring } from "../contract/BodyRules.js"
import { RateLimited } from "../contract/CommonRefusals.js"
import { InputString, OneOf, OptionalEmail, OptionalParam, OptionalPhone, OptionalString, QueryParams } from "../contract/InputSchemas.js"
import { Session } from "../contract/Session.js"
import { VERIFY_TYPES } from "../domain/Verification.js"
import { AuthErrors } from "../http/AuthErrors.js"

/** POST /verify's answer to the first confirmation of a double email change (`code` is a string, as in GoTrue). */
export class EmailChangeAccepted extends Schema.Class<EmailChangeAccepted>("EmailChangeAccepted")({
  msg: Schema.String,
  code: Schema.String
}) {}

export const VerifyPayload = requiring(
  Schema.Struct({
    type: Schema.optional(Schema.NullOr(OneOf(VERIFY_TYPES))),
    token: OptionalString,
    token_hash: OptionalString,
    email: OptionalEmail,
    phone: OptionalPhone,
    redirect_to: OptionalString
  }),
  {
    ...present("type"),
    anyOf: [present("token_hash"), { ...present("token"), anyOf: [present("email"), present("phone")] }]
  }
)

const VerificationRefusals = Schema.Union(
  AuthErrors.refused(403, ["otp_expired", "user_banned"]),
  AuthErrors.refused(404, ["flow_state_not_found"]),
  AuthErrors.refused(422, ["email_exists", "phone_exists"]),
  RateLimited
)

/** A link's fields, as GET /verify takes them in its query and POST /verify/confirm in its form. */
const LinkFields = QueryParams({
  token: OptionalParam,
  type: Schema.optional(InputString.annotations({ description: `One of ${VERIFY_TYPES.join(", ")}` })),
  redirect_to: OptionalParam
})

const LinkRedirect = (description: string) => Schema.Void.annotations({ description })

export class VerifyGroup extends HttpApiGroup.make("verify")
  .add(
    HttpApiEndpoint.post("verify", "/verify")
      .setPayload(VerifyPayload)
      .addSuccess(Schema.Union(Session, EmailChangeAccepted))
      .addError(VerificationRefusals)
      .addError(AuthErrors.refused(400, ["validation_failed"], "A code that is not one of the user's pending ones is 403 `otp_expired`, as in GoTrue."))
  )
  .add(
    HttpApiEndpoint.get("verifyLink", "/verify")
      .setUrlParams(LinkFields)
      .addSuccess(
        LinkRedirect("See Other: to redirect_to with the session, or the error (a missing or unknown token or type too), in the fragment"),
        { status: 303 }
      )
      .addSuccess(
        Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/html" })).annotations({
          description: "With MAILER_LINK_CONFIRM_PAGE on: a page (no script) whose one button posts the link's fields to " +
            "POST /verify/confirm; opening it spends nothing, so a mail scanner that follows links leaves them to their owner"
        }),
        { status: 200 }
      )
      .addError(VerificationRefusals)
      .addError(AuthErrors.invalid(400, ["validation_failed"]))
  )
  .add(
    // Its own path: POST /verify is auth-js's JSON verifyOtp, whose answers must not change.
    HttpApiEndpoint.post("confirmLink", "/verify/confirm")
      .setPayload(LinkFields.pipe(HttpApiSchema.withEncoding({ kind: "UrlParams" })))
      .addSuccess(
        LinkRedirect("See Other: exactly as GET /verify without the page, to redirect_to with the session (or `?code=` in the " +
          "PKCE flow), or the error, in the fragment"),
        { status: 303 }
      )
      .addError(VerificationRefusals)
      .addError(AuthErrors.invalid(400, ["validation_failed"]))
      .addError(AuthErrors.refused(404, ["feature_disabled"], "MAILER_LINK_CONFIRM_PAGE is off."))
  )
  .annotate(OpenApi.Title, "Verify")
  .annotate(OpenApi.Description, "Confirms a sign-up, an email change or a phone change with an emailed or texted code or link") {}

/** The verify slice on its own: what its handlers are built against (Api.ts composes VerifyGroup into AuthApi). */
export const VerifyApi = AuthApiBase.add(VerifyGroup)
