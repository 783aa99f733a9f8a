import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { absent, PKCE_PAIRED, present, requiring, typed } from "../contract/BodyRules.js"
import { CaptchaProtected } from "../contract/CaptchaProtected.js"
import { RateLimited, SendsMail, SendsText } from "../contract/CommonRefusals.js"
import { CodeChallenge, CodeChallengeMethod, MetaSecurity, OneOf, OptionalEmail, OptionalPhone, RedirectParam } from "../contract/InputSchemas.js"
import { MessageSent } from "../contract/MessageSent.js"
import { RESEND_TYPES } from "./Resend.js"

export const ResendPayload = requiring(
  Schema.Struct({
    type: Schema.optional(Schema.NullOr(OneOf(RESEND_TYPES))),
    email: OptionalEmail,
    phone: OptionalPhone,
    code_challenge: CodeChallenge,
    code_challenge_method: CodeChallengeMethod,
    gotrue_meta_security: MetaSecurity
  }),
  {
    ...present("type"),
    anyOf: [
      { ...typed(["signup", "email_change"], present("email")), ...absent("phone") },
      { ...typed(["sms", "phone_change"], present("phone")), ...absent("email") }
    ]
  },
  PKCE_PAIRED
)

export class ResendGroup extends HttpApiGroup.make("resend")
  .add(
    HttpApiEndpoint.post("resend", "/resend").setPayload(ResendPayload).setUrlParams(RedirectParam).addSuccess(MessageSent)
      .addError(SendsMail)
      .addError(SendsText)
      .addError(RateLimited)
  )
  .middleware(CaptchaProtected)
  .annotate(OpenApi.Title, "Resend")
  .annotate(OpenApi.Description, "Sends a pending sign-up confirmation again") {}

/** The resend slice on its own: what its handlers are built against (Api.ts composes ResendGroup into AuthApi). */
export const ResendApi = AuthApiBase.add(ResendGroup)
