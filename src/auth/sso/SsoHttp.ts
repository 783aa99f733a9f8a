import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import { RateLimits } from "../limits/RateLimits.js"
import { AdminSsoProviders } from "./AdminSsoProviders.js"
import { SingleSignOn } from "./SingleSignOn.js"
import { SsoApi } from "./SsoApi.js"

export const SsoHttpLive = HttpApiBuilder.group(SsoApi, "sso", (handlers) =>
  Effect.gen(function*() {
    const sso = yield* SingleSignOn
    const limits = yield* RateLimits
    return handlers
      .handle("sso", ({ payload }) =>
        Effect.zipRight(limits.check("sso"), Effect.map(
          sso.start({
            providerId: payload.provider_id,
            domain: payload.domain,
            redirectTo: payload.redirect_to,
            codeChallenge: payload.code_challenge,
            codeChallengeMethod: payload.code_challenge_method
          }),
          (url) => payload.skip_http_redirect === true ? { url } : HttpServerResponse.redirect(url, { status: 303 })
        )))
      .handle("samlMetadata", ({ urlParams }) =>
        Effect.map(sso.metadata(urlParams.download === "true"), ({ maxAge, xml }) =>
          HttpServerResponse.text(xml, {
            contentType: "application/xml",
            headers: {
              "cache-control": `public, max-age=${maxAge}`,
              ...(urlParams.download === "true" ? { "content-disposition": "attachment; filename=\"metadata.xml\"" } : {})
            }
          })))
      // Successes are 302 and refusals 303, as GoTrue answers them.
      .handle("samlAcs", ({ payload }) =>
        Effect.map(Effect.zipRight(limits.check("saml_assertion"), sso.acs(payload)), ({ location, refused }) => HttpServerResponse.redirect(location, { status: refused ? 303 : 302 })))
  }))

export const AdminSsoHttpLive = HttpApiBuilder.group(SsoApi, "adminSso", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* AdminSsoProviders
    return handlers
      .handle("listProviders", ({ urlParams }) => admin.list(urlParams))
      .handle("createProvider", ({ payload }) => admin.create(payload))
      .handle("getProvider", ({ path }) => admin.get(path.idp_id))
      .handle("updateProvider", ({ path, payload }) => admin.update(path.idp_id, payload))
      .handle("deleteProvider", ({ path }) => admin.remove(path.idp_id))
  }))
