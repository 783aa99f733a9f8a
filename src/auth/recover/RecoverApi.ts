import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { PKCE_PAIRED, present, requiring } from "../contract/BodyRules.js"
import { CaptchaProtected } from "../contract/CaptchaProtected.js"
import { RateLimited, SendsMail } from "../contract/CommonRefusals.js"
import { CodeChallenge, CodeChallengeMethod, MetaSecurity, OptionalEmail, RedirectParam } from "../contract/InputSchemas.js"
import { AuthErrors } from "../http/AuthErrors.js"

export const RecoverPayload = requiring(
  Schema.Struct({
    email: OptionalEmail,
    code_challenge: CodeChallenge,
    code_challenge_method: CodeChallengeMethod,
    gotrue_meta_security: MetaSecurity
  }),
  present("email"),
  PKCE_PAIRED
)

export class RecoverGroup extends HttpApiGroup.make("recover")
  .add(
    HttpApiEndpoint.post("recover", "/recover").setPayload(RecoverPayload).setUrlParams(RedirectParam).addSuccess(Schema.Struct({}))
      .addError(AuthErrors.refused(400, ["email_provider_disabled"], "Recovery needs EXTERNAL_EMAIL_ENABLED (GoTrue's 400)."))
      .addError(SendsMail)
      .addError(RateLimited)
  )
  .middleware(CaptchaProtected)
  .annotate(OpenApi.Title, "Recover")
  .annotate(OpenApi.Description, "Password recovery: mails a code and link that sign in; answers `{}` for any address") {}

/** The recovery slice on its own: what its handlers are built against (Api.ts composes RecoverGroup into AuthApi). */
export const RecoverApi = AuthApiBase.add(RecoverGroup)
