import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import { AuthConfig } from "../../config/AuthConfig.js"
import { CurrentUser } from "../contract/CurrentUser.js"
import { AuthError } from "../domain/AuthError.js"
import { IdentityLinks } from "../users/IdentityLinks.js"
import { External } from "./External.js"
import { passThrough } from "./ExternalHttp.js"
import { IdentitiesApi } from "./IdentitiesApi.js"

/** GoTrue's requireManualLinkingEnabled: it runs after authentication, so an anonymous caller still gets 401. */
const manualLinkingDisabled = () => AuthError.of(404, "manual_linking_disabled", "Manual linking is disabled")

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const IdentitiesHttpLive = HttpApiBuilder.group(IdentitiesApi, "identities", (handlers) =>
  Effect.gen(function*() {
    const config = yield* AuthConfig
    const external = yield* External
    const links = yield* IdentityLinks
    const enabled = config.security.manualLinkingEnabled
    return handlers
      .handle("linkIdentity", ({ request, urlParams }) =>
        Effect.gen(function*() {
          if (!enabled) return yield* manualLinkingDisabled()
          const { user } = yield* CurrentUser
          const url = yield* external.startLink({
            others: passThrough(request.url).filter(([key]) => key !== "skip_http_redirect"),
            provider: urlParams.provider,
            scopes: urlParams.scopes,
            redirectTo: urlParams.redirect_to,
            codeChallenge: urlParams.code_challenge,
            codeChallengeMethod: urlParams.code_challenge_method
          }, user.id)
          return urlParams.skip_http_redirect === "true" ? { url } : HttpServerResponse.redirect(url, { status: 302 })
        }))
      .handle("unlinkIdentity", ({ path }) =>
        Effect.gen(function*() {
          if (!enabled) return yield* manualLinkingDisabled()
          const { claims, user } = yield* CurrentUser
          const request = yield* HttpServerRequest.HttpServerRequest
          // GoTrue's requestAud: the X-JWT-AUD header, else the configured audience.
          if (claims["aud"] !== (request.headers["x-jwt-aud"] ?? config.jwt.aud)) {
            return yield* AuthError.of(403, "unexpected_audience", "Token audience doesn't match request audience")
          }
          if (!UUID.test(path.identity_id)) return yield* AuthError.of(404, "validation_failed", "identity_id must be an UUID")
          yield* links.unlink(user.id, path.identity_id)
          return {}
        }))
  }))
