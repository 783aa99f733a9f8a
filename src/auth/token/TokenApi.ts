import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { present, requiring } from "../contract/BodyRules.js"
import { TokenCaptchaProtected } from "../contract/CaptchaProtected.js"
import { RateLimited } from "../contract/CommonRefusals.js"
import { MetaSecurity, OneOf, OptionalEmail, OptionalPhone, OptionalString, QueryParams } from "../contract/InputSchemas.js"
import { Session } from "../contract/Session.js"
import { AuthErrors } from "../http/AuthErrors.js"

/** The grants' bodies (reference §2.3): which one applies is the query's grant_type. */
export const TokenPayload = requiring(Schema.Struct({
  email: OptionalEmail,
  phone: OptionalPhone,
  password: OptionalString,
  refresh_token: OptionalString,
  auth_code: OptionalString,
  code_verifier: OptionalString,
  id_token: OptionalString,
  access_token: OptionalString,
  nonce: OptionalString,
  provider: OptionalString,
  client_id: OptionalString,
  issuer: OptionalString,
  gotrue_meta_security: MetaSecurity
}), {
  anyOf: [
    { ...present("password"), anyOf: [present("email"), present("phone")] },
    present("refresh_token"),
    present("auth_code", "code_verifier"),
    { ...present("id_token"), anyOf: [present("provider"), present("client_id", "issuer")] }
  ]
})

const GRANTS = ["password", "refresh_token", "pkce", "id_token"]

export class TokenGroup extends HttpApiGroup.make("token")
  .add(
    HttpApiEndpoint.post("token", "/token")
      .setPayload(TokenPayload)
      .setUrlParams(QueryParams({ grant_type: Schema.optional(OneOf(GRANTS, "Which grant the body is for")) }, ["grant_type"]))
      .addSuccess(Session)
      .addError(AuthErrors.refused(400, [
        "invalid_credentials", "email_not_confirmed", "phone_not_confirmed", "user_banned", "refresh_token_not_found",
        "refresh_token_already_used", "session_not_found", "session_expired", "bad_code_verifier", "provider_disabled",
        "validation_failed"
      ], "GoTrue answers 400 to a grant it refuses (wrong password, unknown or reused refresh token, unknown grant_type), where a strict reading of HTTP would say 401 or 422; Gatehouse keeps GoTrue's answer."))
      .addError(AuthErrors.oauth(["invalid request", "invalid nonce"], "The id_token grant refuses a token as GoTrue's OAuthError does."))
      .addError(AuthErrors.refused(403, ["user_banned"]))
      .addError(AuthErrors.refused(404, ["flow_state_not_found"]))
      .addError(AuthErrors.refused(422, ["flow_state_expired", "email_provider_disabled", "phone_provider_disabled", "signup_disabled", "email_exists", "web3_provider_disabled"],
        "`web3_provider_disabled`: grant_type=web3, with Web3 sign-in off (GoTrue's answer)."))
      .addError(RateLimited)
      .annotate(OpenApi.Description, "The grant is the query's `grant_type`; the body carries that grant's fields.")
  )
  .middleware(TokenCaptchaProtected)
  .annotate(OpenApi.Title, "Token")
  .annotate(OpenApi.Description, "Sign-in: the password, refresh_token, pkce and id_token grants (web3 answers 422 web3_provider_disabled)") {}

/** The token slice on its own: what its handlers are built against (Api.ts composes TokenGroup into AuthApi). */
export const TokenApi = AuthApiBase.add(TokenGroup)
