import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { AuthConfig } from "../../config/AuthConfig.js"
import { AuthError } from "../domain/AuthError.js"
import { AuthErrors } from "../http/AuthErrors.js"

/** GoTrue's 404 for every OAuth server route while OAUTH_SERVER_ENABLED is off. */
export const oauthServerDisabled = () => AuthError.of(404, "feature_disabled", "OAuth server is disabled")

/**
 * GoTrue's requireOAuthServerEnabled. On /oauth/* it runs before the bearer check (a missing token is 404 while the
 * server is off); on /user/oauth/grants and /admin/oauth/clients the caller is authenticated first, as in GoTrue.
 */
export class OAuthServerEnabled extends HttpApiMiddleware.Tag<OAuthServerEnabled>()("auth/OAuthServerEnabled", {
  failure: AuthErrors.refused(404, ["feature_disabled"], "OAUTH_SERVER_ENABLED is off.")
}) {}

export const OAuthServerEnabledLive = Layer.effect(
  OAuthServerEnabled,
  Effect.map(AuthConfig, (config) => (config.oauthServer.enabled ? Effect.void : Effect.fail(oauthServerDisabled())))
)
