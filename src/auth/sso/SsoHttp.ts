import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { AuthError } from "../domain/AuthError.js"
import { SsoApi } from "./SsoApi.js"

/** GoTrue's answer on every /sso route while SAML is off; it comes before any rate limit, captcha or body. */
const samlDisabled = Effect.fail(AuthError.of(404, "saml_provider_disabled", "SAML 2.0 is disabled"))

/** SAML single sign-on is not served: supabase-js's signInWithSSO gets GoTrue's "disabled" error, not a 404 page. */
export const SsoHttpLive = HttpApiBuilder.group(SsoApi, "sso", (handlers) =>
  Effect.succeed(
    handlers
      .handle("sso", () => samlDisabled)
      .handle("samlMetadata", () => samlDisabled)
      .handle("samlAcs", () => samlDisabled)
  ))
