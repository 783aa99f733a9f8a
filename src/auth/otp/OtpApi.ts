import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { absent, PKCE_PAIRED, present, requiring } from "../contract/BodyRules.js"
import { CaptchaProtected } from "../contract/CaptchaProtected.js"
import { RateLimited, SendsMail, SendsText } from "../contract/CommonRefusals.js"
import { CodeChallenge, CodeChallengeMethod, MetaSecurity, OneOf, OptionalEmail, OptionalObject, OptionalPhone, RedirectParam } from "../contract/InputSchemas.js"
import { MessageSent } from "../contract/MessageSent.js"
import { AuthErrors } from "../http/AuthErrors.js"

export const OtpPayload = requiring(
  Schema.Struct({
    email: OptionalEmail,
    phone: OptionalPhone,
    create_user: Schema.optional(Schema.NullOr(Schema.Boolean)),
    data: OptionalObject,
    channel: Schema.optional(Schema.NullOr(OneOf(["sms", "whatsapp", ""], "How a phone code is sent; empty or absent means sms (GoTrue's default)"))),
    code_challenge: CodeChallenge,
    code_challenge_method: CodeChallengeMethod,
    gotrue_meta_security: MetaSecurity
  }),
  { anyOf: [{ ...present("email"), ...absent("phone", "channel") }, { ...present("phone"), ...absent("email") }] },
  PKCE_PAIRED
)

export const MagicLinkPayload = requiring(
  Schema.Struct({
    email: OptionalEmail,
    data: OptionalObject,
    code_challenge: CodeChallenge,
    code_challenge_method: CodeChallengeMethod,
    gotrue_meta_security: MetaSecurity
  }),
  present("email"),
  PKCE_PAIRED
)

const PasswordlessRefusals = Schema.Union(
  AuthErrors.refused(422, ["signup_disabled", "email_provider_disabled", "otp_disabled"],
    "GoTrue answers 422 when the address is unknown and create_user is false (`otp_disabled`) or sign-ups are off."),
  SendsMail,
  RateLimited
)

export class OtpGroup extends HttpApiGroup.make("otp")
  .add(
    HttpApiEndpoint.post("otp", "/otp").setPayload(OtpPayload).setUrlParams(RedirectParam).addSuccess(MessageSent)
      .addError(PasswordlessRefusals)
      .addError(SendsText)
      .addError(AuthErrors.refused(400, ["phone_provider_disabled", "validation_failed"], "Phone sign-in needs EXTERNAL_PHONE_ENABLED (GoTrue's 400)."))
  )
  .add(
    HttpApiEndpoint.post("magiclink", "/magiclink").setPayload(MagicLinkPayload).setUrlParams(RedirectParam).addSuccess(MessageSent)
      .addError(PasswordlessRefusals)
  )
  .middleware(CaptchaProtected)
  .annotate(OpenApi.Title, "OTP")
  .annotate(OpenApi.Description, "Passwordless sign-in: a magic link or code by email, a code by SMS; new addresses are signed up") {}

/** The OTP slice on its own: what its handlers are built against (Api.ts composes OtpGroup into AuthApi). */
export const OtpApi = AuthApiBase.add(OtpGroup)
