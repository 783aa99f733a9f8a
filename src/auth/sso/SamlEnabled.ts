import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { AuthConfig } from "../../config/AuthConfig.js"
import { AuthError } from "../domain/AuthError.js"
import { AuthErrors } from "../http/AuthErrors.js"

/** GoTrue's answer on every /sso route while SAML is off; it comes before any rate limit, captcha or body. */
export class SamlEnabled extends HttpApiMiddleware.Tag<SamlEnabled>()("auth/SamlEnabled", {
  failure: AuthErrors.refused(404, ["saml_provider_disabled"], "SAML_ENABLED is off: every /sso route answers this, as GoTrue does.")
}) {}

export const SamlEnabledLive = Layer.effect(
  SamlEnabled,
  Effect.map(AuthConfig, (config) =>
    config.saml.enabled ? Effect.void : Effect.fail(AuthError.of(404, "saml_provider_disabled", "SAML 2.0 is disabled")))
)
