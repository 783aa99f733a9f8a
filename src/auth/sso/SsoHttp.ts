import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { AuthApi } from "../Api.js"
import { AuthError } from "../domain/AuthError.js"

/** GoTrue's answer on every /sso route while SAML is off; it comes before any rate limit, captcha or body. */
const samlDisabled = Effect.fail(AuthError.of(404, "saml_provider_disabled", "SAML 2.0 is disabled"))

/** SAML single sign-on is not served: supabase-js's signInWithSSO gets GoTrue's "disabled" error, not a 404 page. */
export const SsoHttpLive = HttpApiBuilder.group(AuthApi, "sso", (handlers) =>
  Effect.succeed(
    handlers
      .handle("sso", () => samlDisabled)
      .handle("samlMetadata", () => samlDisabled)
      .handle("samlAcs", () => samlDisabled)
  ))
