import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { AdminLinksApi } from "./AdminLinksApi.js"
import { GenerateLink } from "./GenerateLink.js"

export const GenerateLinkHttpLive = HttpApiBuilder.group(AdminLinksApi, "adminLinks", (handlers) =>
  Effect.gen(function*() {
    const links = yield* GenerateLink
    return handlers.handle("generateLink", ({ payload, urlParams }) =>
      links.generate({
        type: payload.type,
        email: payload.email,
        newEmail: payload.new_email,
        password: payload.password,
        data: payload.data,
        redirectTo: payload.redirect_to,
        queryRedirectTo: urlParams.redirect_to
      }))
  }))
