import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { Authenticated } from "../contract/Authenticated.js"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { CHALLENGE_METHOD_PATTERN, documented, InputString, OptionalParam, QueryParams } from "../contract/InputSchemas.js"
import { CODE_CHALLENGE_PATTERN } from "../domain/Pkce.js"
import { AuthErrors } from "../http/AuthErrors.js"
import { Found, PROVIDERS } from "./ExternalApi.js"

const LinkingRefusals = Schema.Union(
  AuthErrors.refused(404, ["manual_linking_disabled"], "Manual linking needs SECURITY_MANUAL_LINKING_ENABLED."),
  AuthErrors.refused(403, ["unexpected_audience"])
)

export class IdentitiesGroup extends HttpApiGroup.make("identities")
  .add(
    HttpApiEndpoint.get("linkIdentity", "/user/identities/authorize")
      .setUrlParams(QueryParams({
        provider: Schema.optional(PROVIDERS),
        scopes: OptionalParam,
        redirect_to: OptionalParam,
        code_challenge: Schema.optional(documented({ pattern: CODE_CHALLENGE_PATTERN })),
        code_challenge_method: Schema.optional(documented({ pattern: CHALLENGE_METHOD_PATTERN })),
        skip_http_redirect: Schema.optional(InputString.annotations({ description: "`true`: answer the URL as JSON instead of 302 Found" }))
      }, ["provider"]))
      .addSuccess(Schema.Struct({ url: Schema.String }))
      .addSuccess(Found("Found: to the provider's sign-in page (without skip_http_redirect=true)"), { status: 302 })
      .addError(LinkingRefusals)
      .addError(AuthErrors.refused(400, ["validation_failed"], "A provider that is not enabled is 400 `validation_failed`, as in GoTrue."))
      .annotate(
        OpenApi.Description,
        "Starts a provider's sign-in whose callback adds the identity to the caller (302 Found to the provider, or `{url}` with skip_http_redirect=true)"
      )
  )
  .add(
    HttpApiEndpoint.del("unlinkIdentity", "/user/identities/:identity_id")
      .setPath(Schema.Struct({ identity_id: InputString }))
      .addSuccess(Schema.Struct({}))
      .addError(LinkingRefusals)
      .addError(AuthErrors.refused(404, ["validation_failed"], "An identity_id that is not a UUID is 404 `validation_failed`, as in GoTrue."))
      .addError(AuthErrors.refused(422, ["single_identity_not_deletable", "identity_not_found", "email_conflict_identity_not_deletable"]))
  )
  .middleware(Authenticated)
  .annotate(OpenApi.Title, "Identities")
  .annotate(
    OpenApi.Description,
    "Manual linking and unlinking of the caller's provider identities (SECURITY_MANUAL_LINKING_ENABLED): needs `Authorization: Bearer <access token>`"
  ) {}

/** The identities slice on its own: what its handlers are built against (Api.ts composes IdentitiesGroup into AuthApi). */
export const IdentitiesApi = AuthApiBase.add(IdentitiesGroup)
