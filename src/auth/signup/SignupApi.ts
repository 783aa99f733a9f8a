import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { absent, PKCE_FORMATS, PKCE_PAIRED, present, requiring } from "../contract/BodyRules.js"
import { CaptchaProtected } from "../contract/CaptchaProtected.js"
import { RateLimited, SendsMail, SendsText } from "../contract/CommonRefusals.js"
import { InputString, MetaSecurity, OptionalEmail, OptionalObject, OptionalPhone, OptionalString, RedirectParam } from "../contract/InputSchemas.js"
import { Session } from "../contract/Session.js"
import { User } from "../contract/User.js"
import { AuthErrors } from "../http/AuthErrors.js"

export const SignupPayload = requiring(
  Schema.Struct({
    email: OptionalEmail,
    phone: OptionalPhone,
    password: OptionalString,
    data: OptionalObject,
    channel: Schema.optional(Schema.NullOr(InputString.annotations({
      description: "How a phone sign-up's code is sent: `sms` (also when empty or absent) or `whatsapp` (Twilio only; otherwise 400 validation_failed). Not read for an email or anonymous sign-up"
    }))),
    code_challenge: OptionalString,
    code_challenge_method: OptionalString,
    gotrue_meta_security: MetaSecurity
  }),
  {
    description: "An email address or a phone number with a password (PKCE only with an email address); neither is an " +
      "anonymous sign-in, which reads nothing else but `data` and `gotrue_meta_security`, as in GoTrue.",
    anyOf: [
      { allOf: [present("email", "password"), absent("phone"), PKCE_PAIRED, PKCE_FORMATS] },
      { allOf: [present("phone", "password"), absent("email", "code_challenge", "code_challenge_method")] },
      absent("email", "phone")
    ]
  }
)

export class SignupGroup extends HttpApiGroup.make("signup")
  .add(
    HttpApiEndpoint.post("signup", "/signup")
      .setPayload(SignupPayload)
      .setUrlParams(RedirectParam)
      .addSuccess(Schema.Union(Session, User))
      .addError(AuthErrors.refused(400, ["email_provider_disabled", "phone_provider_disabled", "user_already_exists", "validation_failed"],
        "A phone number already registered is 400 `user_already_exists` (the spec's status; GoTrue: 422)."))
      .addError(AuthErrors.refused(422, ["anonymous_provider_disabled", "signup_disabled", "user_already_exists", "weak_password"],
        "GoTrue answers 422 for an address already registered (with MAILER_AUTOCONFIRM) or a password the policy refuses, where a strict reading of HTTP would say 409."))
      .addError(SendsMail)
      .addError(SendsText)
      .addError(RateLimited)
      .annotate(OpenApi.Description, "With MAILER_AUTOCONFIRM (or PHONE_AUTOCONFIRM) the answer is a session; otherwise the user, whose address must be confirmed (an address already registered answers a user that has no identities, so it reveals nothing).")
  )
  .middleware(CaptchaProtected)
  .annotate(OpenApi.Title, "Signup")
  .annotate(OpenApi.Description, "Sign-up with an email address, a phone number, or anonymously") {}

/** The sign-up slice on its own: what its handlers are built against (Api.ts composes SignupGroup into AuthApi). */
export const SignupApi = AuthApiBase.add(SignupGroup)
