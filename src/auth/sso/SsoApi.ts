import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AdminAuthenticated } from "../contract/AdminAuthenticated.js"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { CaptchaProtected } from "../contract/CaptchaProtected.js"
import { RateLimited } from "../contract/CommonRefusals.js"
import { CodeChallenge, CodeChallengeMethod, InputJson, InputString, MetaSecurity, OptionalParam, OptionalString, QueryParams } from "../contract/InputSchemas.js"
import { Timestamp } from "../contract/Timestamp.js"
import { AuthErrors } from "../http/AuthErrors.js"
import { SamlEnabled } from "./SamlEnabled.js"

const Redirect = (description: string) => Schema.Void.annotations({ description })

export const SsoPayload = Schema.Struct({
  provider_id: OptionalString.annotations({ description: "The SSO provider's id (a UUID); exactly one of provider_id and domain" }),
  domain: OptionalString.annotations({ description: "An email domain assigned to a provider (matched exactly)" }),
  redirect_to: OptionalString.annotations({ description: "Where to land after sign-in, if the allow-list accepts it (else SITE_URL)" }),
  skip_http_redirect: Schema.optional(Schema.NullOr(Schema.Boolean)).annotations({ description: "true: answer `{url}` instead of a 303 (auth-js sends true)" }),
  code_challenge: CodeChallenge,
  code_challenge_method: CodeChallengeMethod,
  gotrue_meta_security: MetaSecurity
})

/** What the IdP posts (HTTP-POST binding); other fields are ignored. */
const AcsForm = Schema.Struct({
  SAMLResponse: OptionalParam.annotations({ description: "The base64 SAML Response" }),
  RelayState: OptionalParam.annotations({ description: "The relay state POST /sso handed out (SP-initiated), or empty or a URL (IdP-initiated)" }),
  SAMLart: OptionalParam.annotations({ description: "An artifact: refused (the Artifact binding is not supported)" })
}).annotations({ jsonSchema: { additionalProperties: true } })

const XmlDocument = Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: "application/xml" }))
  .annotations({ description: "The SP's SAML 2.0 metadata (EntityDescriptor)" })

export class SsoGroup extends HttpApiGroup.make("sso")
  .add(
    HttpApiEndpoint.post("sso", "/sso")
      .setPayload(SsoPayload)
      .addSuccess(Schema.Struct({ url: Schema.String.annotations({ description: "The IdP's sign-in URL with a signed AuthnRequest" }) }))
      .addSuccess(Redirect("See Other: to the IdP (without skip_http_redirect)"), { status: 303 })
      .addError(AuthErrors.invalid(400, ["validation_failed", "bad_json"]))
      .addError(AuthErrors.refused(404, ["sso_provider_not_found", "sso_provider_disabled"],
        "An unknown or disabled provider is 404, as in GoTrue."))
      .addError(AuthErrors.refused(500, ["unexpected_failure"], "The provider's stored metadata is unreadable (GoTrue took it), or the AuthnRequest could not be built."))
      .addError(RateLimited)
      .middleware(CaptchaProtected)
      .annotate(OpenApi.Description, "Starts an SP-initiated SAML sign-in at the provider named by provider_id or by an email domain; PKCE with code_challenge")
  )
  .add(
    HttpApiEndpoint.get("samlMetadata", "/sso/saml/metadata")
      .setUrlParams(QueryParams({ download: Schema.optional(InputString.annotations({ description: "true: as an attachment, valid for 5 years" })) }))
      .addSuccess(XmlDocument)
      .annotate(OpenApi.Description, "The service provider's metadata: entity ID (this URL), ACS, signing certificate")
  )
  .add(
    HttpApiEndpoint.post("samlAcs", "/sso/saml/acs")
      .setPayload(AcsForm.pipe(HttpApiSchema.withEncoding({ kind: "UrlParams" })))
      .addSuccess(Redirect("Found: to redirect_to (or SITE_URL) with `?code=` (PKCE) or the session in the fragment"), { status: 302 })
      .addSuccess(Redirect("See Other: a refused response, to SITE_URL with `error`, `error_code` and `error_description` in the query"), { status: 303 })
      .addError(RateLimited)
      .annotate(OpenApi.Description, "The Assertion Consumer Service (HTTP-POST binding). Every refusal is a 303 to SITE_URL, as in GoTrue; " +
        "an assertion already used is refused (GoTrue accepts it again without its RelayState)")
  )
  // Added last, so it runs first: with SAML off every route is 404 before the captcha or the body.
  .middlewareEndpoints(SamlEnabled)
  .annotate(OpenApi.Title, "SSO")
  .annotate(OpenApi.Description, "SAML 2.0 single sign-on (SAML_ENABLED; otherwise every route is 404 saml_provider_disabled)") {}

const AttributeMapping = InputJson.annotations({
  description: "{\"keys\": {\"<claim>\": {\"name\"?: string, \"names\"?: string[], \"default\"?: any, \"array\"?: boolean}}}",
  jsonSchema: { type: "object" }
})

export const ProviderPayload = Schema.Struct({
  type: OptionalString.annotations({ description: "\"saml\" (required on create)" }),
  metadata_url: OptionalString.annotations({ description: "An https URL of the IdP's metadata (one of metadata_url and metadata_xml)" }),
  metadata_xml: OptionalString.annotations({ description: "The IdP's metadata XML" }),
  domains: Schema.optional(Schema.NullOr(Schema.Array(InputString))).annotations({ description: "Email domains; on update the complete new set" }),
  attribute_mapping: Schema.optional(AttributeMapping),
  name_id_format: OptionalString.annotations({ description: "A SAML NameID format URN, or empty (persistent); omitted on update clears it" }),
  resource_id: OptionalString.annotations({ description: "Your own unique id for the provider (case-insensitive); \"\" clears it" }),
  disabled: Schema.optional(Schema.NullOr(Schema.Boolean))
})

export const Provider = Schema.Struct({
  id: Schema.String,
  resource_id: Schema.optional(Schema.String),
  disabled: Schema.NullOr(Schema.Boolean),
  saml: Schema.Struct({
    entity_id: Schema.String,
    metadata_xml: Schema.optional(Schema.String),
    metadata_url: Schema.optional(Schema.String),
    attribute_mapping: AttributeMapping,
    name_id_format: Schema.optional(Schema.String)
  }),
  domains: Schema.Array(Schema.Struct({ domain: Schema.String })),
  created_at: Timestamp,
  updated_at: Timestamp
})

const IdpParam = Schema.Struct({ idp_id: InputString.annotations({ description: "The provider's UUID, or resource_<resource_id>" }) })
const NoSuchProvider = AuthErrors.refused(404, ["sso_provider_not_found"], "An unknown or malformed idp_id is 404, as in GoTrue.")
const ProviderRefusals = Schema.Union(
  AuthErrors.invalid(400, ["validation_failed", "bad_json"]),
  AuthErrors.refused(400, ["saml_metadata_fetch_failed", "sso_domain_already_exists", "saml_entity_id_mismatch"],
    "GoTrue answers 400 for a metadata URL answering other than 200 (Gatehouse also for one it cannot reach, GoTrue's 500) and for a domain another provider holds."),
  AuthErrors.refused(422, ["saml_idp_already_exists", "conflict"])
)

export class AdminSsoGroup extends HttpApiGroup.make("adminSso")
  .add(
    HttpApiEndpoint.get("listProviders", "/admin/sso/providers")
      .setUrlParams(QueryParams({ resource_id: OptionalParam, resource_id_prefix: OptionalParam }))
      .addSuccess(Schema.Struct({ items: Schema.Array(Provider) }))
      .annotate(OpenApi.Description, "Every SSO provider (without metadata_xml), or those with this resource_id or resource_id prefix")
  )
  .add(
    HttpApiEndpoint.post("createProvider", "/admin/sso/providers")
      .setPayload(ProviderPayload)
      .addSuccess(Provider, { status: 201 })
      .addError(ProviderRefusals)
  )
  .add(HttpApiEndpoint.get("getProvider", "/admin/sso/providers/:idp_id").setPath(IdpParam).addSuccess(Provider).addError(NoSuchProvider))
  .add(
    HttpApiEndpoint.put("updateProvider", "/admin/sso/providers/:idp_id")
      .setPath(IdpParam)
      .setPayload(ProviderPayload)
      .addSuccess(Provider)
      .addError(NoSuchProvider)
      .addError(ProviderRefusals)
  )
  .add(
    HttpApiEndpoint.del("deleteProvider", "/admin/sso/providers/:idp_id")
      .setPath(IdpParam)
      .addSuccess(Provider)
      .addError(NoSuchProvider)
      .annotate(OpenApi.Description, "Deletes the provider with its domains and relay states; answers the deleted provider")
  )
  .middleware(AdminAuthenticated)
  .annotate(OpenApi.Title, "Admin: SSO providers")
  .annotate(OpenApi.Description, "SAML identity providers, whatever SAML_ENABLED says: each call needs `Authorization: Bearer <admin JWT>` (the service_role key)") {}

/** The SSO slice on its own: what its handlers are built against (Api.ts composes the groups into AuthApi). */
export const SsoApi = AuthApiBase.add(SsoGroup).add(AdminSsoGroup)
