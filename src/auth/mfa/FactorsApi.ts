import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { Authenticated } from "../contract/Authenticated.js"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { RateLimited, SendsText } from "../contract/CommonRefusals.js"
import { InputString, OneOf, OptionalString } from "../contract/InputSchemas.js"
import { Session } from "../contract/Session.js"
import { FACTOR_TYPES } from "../domain/FactorRow.js"
import { AuthErrors } from "../http/AuthErrors.js"

export const FactorIdParam = Schema.Struct({ factor_id: InputString })

/** POST /factors as auth-js sends it (reference §1.3). */
export const EnrollPayload = Schema.Struct({
  factor_type: Schema.optional(Schema.NullOr(OneOf(FACTOR_TYPES, "totp, phone or webauthn (anything else is 400 `validation_failed`)"))),
  friendly_name: OptionalString,
  issuer: Schema.optional(Schema.NullOr(InputString.annotations({ description: "TOTP only; default: SITE_URL's host, port included" }))),
  phone: Schema.optional(Schema.NullOr(InputString.annotations({ description: "Phone factors only: E.164, with or without the `+`" })))
})

/** POST /factors/{id}/challenge: TOTP reads nothing; phone and WebAuthn need a JSON body (auth-js sends one). */
export const ChallengePayload = Schema.NullOr(Schema.Struct({
  channel: Schema.optional(Schema.NullOr(InputString.annotations({ description: "Phone factors: `sms` (the default) or `whatsapp` (Twilio only)" }))),
  webauthn: Schema.optional(Schema.Unknown)
}))

/** POST /factors/{id}/verify. */
export const VerifyPayload = Schema.Struct({
  challenge_id: Schema.optional(Schema.NullOr(InputString.annotations({ description: "The challenge's id (a UUID; anything else is 400 `bad_json`)" }))),
  code: OptionalString,
  webauthn: Schema.optional(Schema.Unknown)
})

export const EnrolledFactor = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal(...FACTOR_TYPES),
  friendly_name: Schema.String,
  totp: Schema.optional(Schema.Struct({
    qr_code: Schema.String.annotations({ description: "SVG markup (auth-js prefixes `data:image/svg+xml;utf-8,`)" }),
    secret: Schema.String,
    uri: Schema.String
  })),
  phone: Schema.optional(Schema.String.annotations({ description: "The number exactly as sent" }))
}).annotations({ identifier: "EnrolledFactor" })

export const FactorChallenge = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal(...FACTOR_TYPES),
  expires_at: Schema.Int.annotations({ description: "Unix seconds" }),
  webauthn: Schema.optional(Schema.Struct({ type: Schema.Literal("create", "request"), credential_options: Schema.Unknown }))
}).annotations({ identifier: "FactorChallenge" })

const Switches = AuthErrors.refused(422, [
  "mfa_totp_enroll_not_enabled", "mfa_phone_enroll_not_enabled", "mfa_webauthn_enroll_not_enabled",
  "mfa_totp_verify_not_enabled", "mfa_phone_verify_not_enabled", "mfa_webauthn_verify_not_enabled"
], "A switched-off factor type (MFA_<TYPE>_ENROLL_ENABLED, MFA_<TYPE>_VERIFY_ENABLED) is 422, as in GoTrue.")
const NotAnonymous = AuthErrors.refused(403, ["no_authorization"], "An anonymous user has no factors: 403, as in GoTrue.")
const NoSuchFactor = AuthErrors.refused(404, ["validation_failed", "mfa_factor_not_found"],
  "A factor_id that is not a UUID, or not one of the caller's factors, is 404, as in GoTrue.")
const Failure = AuthErrors.refused(500, ["unexpected_failure"])

export class FactorsGroup extends HttpApiGroup.make("factors")
  .add(
    HttpApiEndpoint.post("enroll", "/factors")
      .setPayload(EnrollPayload)
      .addSuccess(EnrolledFactor)
      .addError(AuthErrors.invalid(400, ["validation_failed", "bad_json"]))
      .addError(AuthErrors.refused(403, ["insufficient_aal", "no_authorization"], "A user with a verified factor enrolls another from an aal2 session only."))
      .addError(Switches)
      .addError(AuthErrors.refused(422, ["mfa_verified_factor_exists", "mfa_factor_name_conflict", "too_many_enrolled_mfa_factors"]))
      .addError(Failure)
      .annotate(OpenApi.Description, "Starts enrolling a second factor (unverified until its first challenge is verified)")
  )
  .add(
    HttpApiEndpoint.post("challenge", "/factors/:factor_id/challenge")
      .setPath(FactorIdParam)
      .setPayload(ChallengePayload)
      .addSuccess(FactorChallenge)
      .addError(AuthErrors.invalid(400, ["validation_failed", "bad_json"]))
      .addError(NotAnonymous)
      .addError(NoSuchFactor)
      .addError(Switches)
      .addError(SendsText)
      .addError(RateLimited)
      .addError(Failure)
      .annotate(OpenApi.Description, "A challenge of one of the caller's factors (a phone factor is texted its code)")
  )
  .add(
    HttpApiEndpoint.post("verify", "/factors/:factor_id/verify")
      .setPath(FactorIdParam)
      .setPayload(VerifyPayload)
      .addSuccess(Session)
      .addError(AuthErrors.invalid(400, ["validation_failed", "bad_json"]))
      .addError(NotAnonymous)
      .addError(NoSuchFactor)
      .addError(Switches)
      .addError(AuthErrors.refused(422, ["mfa_factor_not_found", "mfa_ip_address_mismatch", "mfa_challenge_expired", "mfa_verification_failed"]))
      .addError(AuthErrors.refused(429, ["over_request_rate_limit"],
        "Also once the factor has taken MFA_MAX_VERIFY_FAILURES failed codes within MFA_VERIFY_FAILURE_WINDOW (Gatehouse's own limit), until that window ends."))
      .addError(Failure)
      .annotate(OpenApi.Description, "Verifies a challenge: the factor is verified and the session raised to aal2, answered with its new tokens")
  )
  .add(
    HttpApiEndpoint.del("unenroll", "/factors/:factor_id")
      .setPath(FactorIdParam)
      .addSuccess(Schema.Struct({ id: Schema.String }))
      .addError(NotAnonymous)
      .addError(NoSuchFactor)
      .addError(AuthErrors.refused(422, ["insufficient_aal"], "A verified factor is removed from an aal2 session only: 422, as in GoTrue."))
      .annotate(OpenApi.Description, "Removes one of the caller's factors; the sessions it raised fall back to aal1")
  )
  .middleware(Authenticated)
  .annotate(OpenApi.Title, "Factors")
  .annotate(OpenApi.Description, "The caller's second factors (MFA): each call needs `Authorization: Bearer <access token>`") {}

/** The factors slice on its own: what its handlers are built against (Api.ts composes FactorsGroup into AuthApi). */
export const FactorsApi = AuthApiBase.add(FactorsGroup)
