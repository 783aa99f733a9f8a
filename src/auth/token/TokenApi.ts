import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
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
  chain: OptionalString,
  message: OptionalString,
  signature: OptionalString,
  gotrue_meta_security: MetaSecurity
}), {
  anyOf: [
    { ...present("password"), anyOf: [present("email"), present("phone")] },
    present("refresh_token"),
    present("auth_code", "code_verifier"),
    { ...present("id_token"), anyOf: [present("provider"), present("client_id", "issuer")] },
    present("chain", "message", "signature")
  ]
})

const GRANTS = ["password", "refresh_token", "pkce", "id_token", "web3"]

export class TokenGroup extends HttpApiGroup.make("token")
  .add(
    HttpApiEndpoint.post("token", "/token")
      .setPayload(TokenPayload)
      .setUrlParams(QueryParams({ grant_type: Schema.optional(OneOf(GRANTS, "Which grant the body is for")) }, ["grant_type"]))
      .addSuccess(Session)
      .addError(AuthErrors.refused(400, [
        "invalid_credentials", "email_not_confirmed", "phone_not_confirmed", "user_banned", "refresh_token_not_found",
        "refresh_token_already_used", "session_not_found", "session_expired", "bad_code_verifier", "provider_disabled",
        "validation_failed", "web3_unsupported_chain"
      ], "GoTrue answers 400 to a grant it refuses (wrong password, unknown or reused refresh token, unknown grant_type), where a strict reading of HTTP would say 401 or 422; Gatehouse keeps GoTrue's answer."))
      .addError(AuthErrors.oauth(["invalid request", "invalid nonce", "invalid_grant"],
        "The id_token grant refuses a token, and the web3 grant a signed message (signature, URI, domain, time window, or a message already used), as GoTrue's OAuthError does."))
      .addError(AuthErrors.refused(403, ["user_banned"]))
      .addError(AuthErrors.refused(404, ["flow_state_not_found"]))
      .addError(AuthErrors.refused(422, ["flow_state_expired", "email_provider_disabled", "phone_provider_disabled", "signup_disabled", "email_exists", "web3_provider_disabled"],
        "`web3_provider_disabled`: grant_type=web3 for a chain whose EXTERNAL_WEB3_<CHAIN>_ENABLED is off."))
      .addError(RateLimited)
      .annotate(OpenApi.Description, "The grant is the query's `grant_type`; the body carries that grant's fields. `web3`: `chain` (`ethereum` or `solana`), `message` (a Sign-In-With-Ethereum (EIP-4361) or Sign-In-With-Solana message) and `signature` (Ethereum: the wallet's personal_sign, 0x and 130 hex digits; Solana: 64 bytes in base64 or base64url, padded or not).")
  )
  .middleware(TokenCaptchaProtected)
  .annotate(OpenApi.Title, "Token")
  .annotate(OpenApi.Description, "Sign-in: the password, refresh_token, pkce, id_token and web3 grants") {}

/** The token slice on its own: what its handlers are built against (Api.ts composes TokenGroup into AuthApi). */
export const TokenApi = AuthApiBase.add(TokenGroup)
