import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { AuthErrors } from "../http/AuthErrors.js"

/**
 * SAML single sign-on. It is not served yet: with SAML off, GoTrue answers every /sso route 404
 * saml_provider_disabled before it reads the request, and so does this group (its bodies are not read).
 */
export class SsoGroup extends HttpApiGroup.make("sso")
  .add(HttpApiEndpoint.post("sso", "/sso").addSuccess(Schema.Struct({ url: Schema.String })))
  .add(HttpApiEndpoint.get("samlMetadata", "/sso/saml/metadata").addSuccess(Schema.String))
  .add(HttpApiEndpoint.post("samlAcs", "/sso/saml/acs").addSuccess(Schema.Struct({})))
  .addError(AuthErrors.refused(404, ["saml_provider_disabled"], "SAML is off: every /sso route answers this, as GoTrue does."))
  .annotate(OpenApi.Title, "SSO")
  .annotate(OpenApi.Description, "SAML 2.0 single sign-on: disabled, every route answers 404 saml_provider_disabled") {}

/** The SSO slice on its own: what its handlers are built against (Api.ts composes SsoGroup into AuthApi). */
export const SsoApi = AuthApiBase.add(SsoGroup)
