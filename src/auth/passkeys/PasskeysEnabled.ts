import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { AuthConfig } from "../../config/AuthConfig.js"
import { AuthError } from "../domain/AuthError.js"
import { AuthErrors } from "../http/AuthErrors.js"

/**
 * GoTrue's requirePasskeyEnabled on every user /passkeys route. It runs before authentication and captcha, so with
 * passkeys off nobody learns anything else about a request (a missing token is 404 passkey_disabled, not 401).
 */
export class PasskeysEnabled extends HttpApiMiddleware.Tag<PasskeysEnabled>()("auth/PasskeysEnabled", {
  failure: AuthErrors.refused(404, ["passkey_disabled"], "PASSKEY_ENABLED is off: GoTrue answers 404 before any other check.")
}) {}

export const PasskeysEnabledLive = Layer.effect(
  PasskeysEnabled,
  Effect.map(AuthConfig, (config) =>
    config.passkey.enabled ? Effect.void : Effect.fail(AuthError.of(404, "passkey_disabled", "Passkeys are disabled")))
)
