import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AdminAuthenticated } from "../contract/AdminAuthenticated.js"
import { Authenticated } from "../contract/Authenticated.js"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { CaptchaProtected } from "../contract/CaptchaProtected.js"
import { RateLimited } from "../contract/CommonRefusals.js"
import { InputString, OptionalString } from "../contract/InputSchemas.js"
import { Session } from "../contract/Session.js"
import { Timestamp } from "../contract/Timestamp.js"
import { AuthErrors } from "../http/AuthErrors.js"
import { PasskeysEnabled } from "./PasskeysEnabled.js"

/** A passkey as the lists, the rename and a registration answer it (GoTrue omits an empty name and a null last use). */
export const PasskeyItem = Schema.Struct({
  id: Schema.String,
  friendly_name: Schema.optional(Schema.String),
  created_at: Timestamp,
  last_used_at: Schema.optional(Timestamp)
})

/** A ceremony's start: the options for navigator.credentials (bare, no `publicKey` wrapper) and the challenge to answer. */
export const PasskeyCeremony = Schema.Struct({
  challenge_id: Schema.String,
  options: Schema.Unknown.annotations({
    description: "PublicKeyCredentialCreationOptionsJSON or PublicKeyCredentialRequestOptionsJSON, as go-webauthn writes it",
    jsonSchema: { type: "object" }
  }),
  expires_at: Schema.Int.annotations({ description: "When the challenge expires, in Unix seconds" })
})

/**
 * The answer to a ceremony. Both fields are checked by the service, with GoTrue's own messages: a missing one is
 * 400 validation_failed, a credential that is no WebAuthn response 400 webauthn_verification_failed.
 */
export const PasskeyVerifyPayload = Schema.Struct({
  challenge_id: OptionalString.annotations({ description: "The challenge_id the options came with (a UUID)" }),
  credential: Schema.optional(Schema.Unknown.annotations({
    description: "The WebAuthn response as JSON (RegistrationResponseJSON or AuthenticationResponseJSON, base64url fields)",
    jsonSchema: { type: "object" }
  }))
}).annotations({ jsonSchema: { required: ["challenge_id", "credential"] } })

export const PasskeyRenamePayload = Schema.Struct({
  friendly_name: OptionalString.annotations({ description: "1 to 120 bytes of UTF-8", jsonSchema: { minLength: 1 } })
})

const PasskeyIdParam = Schema.Struct({ passkey_id: InputString })
const NoSuchPasskey = AuthErrors.refused(404, ["validation_failed"], "An unknown, malformed or someone else's passkey_id is 404 `validation_failed` \"Passkey not found\", as in GoTrue.")
const InsufficientAal = AuthErrors.refused(403, ["insufficient_aal", "no_authorization"],
  "`insufficient_aal`: the user has a verified MFA factor and the session is not aal2; `no_authorization`: an anonymous user.")
const CeremonyRefusals = Schema.Union(
  AuthErrors.invalid(400, ["validation_failed", "bad_json"]),
  AuthErrors.refused(400, ["webauthn_challenge_not_found", "webauthn_challenge_expired", "webauthn_verification_failed"],
    "A consumed, unknown, expired or unverifiable ceremony is 400, as in GoTrue.")
)

export class PasskeysGroup extends HttpApiGroup.make("passkeys")
  .add(
    HttpApiEndpoint.post("authenticationOptions", "/passkeys/authentication/options")
      .addSuccess(PasskeyCeremony)
      .addError(RateLimited)
      .middleware(CaptchaProtected)
      .annotate(OpenApi.Description, "Starts a discoverable sign-in: no user is named, the authenticator chooses the passkey (RATE_LIMIT_PASSKEY per client). " +
        "The body is read only for the captcha, as `{gotrue_meta_security: {captcha_token}}` (auth-js sends it)")
  )
  .add(
    HttpApiEndpoint.post("authenticationVerify", "/passkeys/authentication/verify")
      .setPayload(PasskeyVerifyPayload)
      .addSuccess(Session)
      .addError(CeremonyRefusals)
      .addError(AuthErrors.refused(403, ["email_not_confirmed", "phone_not_confirmed", "user_banned"]))
      .annotate(OpenApi.Description, "Signs in with the assertion: a new aal1 session whose amr is `passkey`. No user is ever created here.")
  )
  .add(
    HttpApiEndpoint.post("registrationOptions", "/passkeys/registration/options")
      .addSuccess(PasskeyCeremony)
      .addError(InsufficientAal)
      .addError(AuthErrors.refused(422, ["validation_failed", "too_many_passkeys"],
        "GoTrue answers 422 for an SSO user and for a user at PASSKEY_MAX_PASSKEYS_PER_USER."))
      .middleware(Authenticated)
      .annotate(OpenApi.Description, "Starts adding a passkey to the caller; any body is ignored")
  )
  .add(
    HttpApiEndpoint.post("registrationVerify", "/passkeys/registration/verify")
      .setPayload(PasskeyVerifyPayload)
      .addSuccess(PasskeyItem)
      .addError(CeremonyRefusals)
      .addError(InsufficientAal)
      .addError(AuthErrors.refused(422, ["validation_failed", "too_many_passkeys", "webauthn_credential_exists"],
        "GoTrue answers 422 for an SSO user, a user at the limit, and a credential already registered."))
      .middleware(Authenticated)
      .annotate(OpenApi.Description, "Stores the passkey the authenticator made; it is named after its authenticator (\"Passkey\" when unknown)")
  )
  .add(
    HttpApiEndpoint.get("listPasskeys", "/passkeys")
      .addSuccess(Schema.Array(PasskeyItem))
      .middleware(Authenticated)
      .annotate(OpenApi.Description, "The caller's passkeys, oldest first (also at /passkeys/)")
  )
  .add(
    HttpApiEndpoint.patch("renamePasskey", "/passkeys/:passkey_id")
      .setPath(PasskeyIdParam)
      .setPayload(PasskeyRenamePayload)
      .addSuccess(PasskeyItem)
      .addError(AuthErrors.invalid(400, ["validation_failed"]))
      .addError(NoSuchPasskey)
      .middleware(Authenticated)
  )
  .add(
    HttpApiEndpoint.del("deletePasskey", "/passkeys/:passkey_id")
      .setPath(PasskeyIdParam)
      .addSuccess(Schema.Void, { status: 204 })
      .addError(InsufficientAal)
      .addError(NoSuchPasskey)
      .middleware(Authenticated)
  )
  // Added last, so it runs first: before the bearer check and the captcha (HttpApi runs the last middleware outermost).
  .middlewareEndpoints(PasskeysEnabled)
  .annotate(OpenApi.Title, "Passkeys")
  .annotate(
    OpenApi.Description,
    "First-factor WebAuthn sign-in (PASSKEY_ENABLED; otherwise every route is 404 passkey_disabled). Sign-in is public; " +
      "registering and managing passkeys needs `Authorization: Bearer <access token>`, and an aal2 session once the user has a verified MFA factor."
  ) {}

const UserPasskeyParams = Schema.Struct({ user_id: InputString, passkey_id: InputString })
const NoSuchUser = AuthErrors.refused(404, ["user_not_found", "validation_failed"], "A user_id that is not a UUID is 404 `validation_failed`, as in GoTrue.")

export class AdminPasskeysGroup extends HttpApiGroup.make("adminPasskeys")
  .add(
    HttpApiEndpoint.get("listUserPasskeys", "/admin/users/:user_id/passkeys")
      .setPath(Schema.Struct({ user_id: InputString }))
      .addSuccess(Schema.Array(PasskeyItem))
      .addError(NoSuchUser)
  )
  .add(
    HttpApiEndpoint.del("deleteUserPasskey", "/admin/users/:user_id/passkeys/:passkey_id")
      .setPath(UserPasskeyParams)
      .addSuccess(Schema.Void, { status: 204 })
      .addError(NoSuchUser)
  )
  .middleware(AdminAuthenticated)
  .annotate(OpenApi.Title, "Admin: passkeys")
  .annotate(OpenApi.Description, "A user's passkeys, whatever PASSKEY_ENABLED says: each call needs `Authorization: Bearer <admin JWT>` (the service_role key)") {}

/** The passkeys slice on its own: what its handlers are built against (Api.ts composes the groups into AuthApi). */
export const PasskeysApi = AuthApiBase.add(PasskeysGroup).add(AdminPasskeysGroup)
