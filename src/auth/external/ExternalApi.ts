import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { OAUTH_PROVIDERS } from "../oauth/OAuthProviders.js"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { CHALLENGE_METHOD_PATTERN, documented, InputString, OptionalParam, QueryParams } from "../contract/InputSchemas.js"
import { CODE_CHALLENGE_PATTERN } from "../domain/Pkce.js"
import { AuthErrors } from "../http/AuthErrors.js"

const CallbackParams = Schema.Struct({
  state: OptionalParam,
  code: OptionalParam,
  error: OptionalParam,
  error_description: OptionalParam,
  oauth_token: Schema.optional(InputString.annotations({ description: "OAuth 1.0a (twitter): the request token, in place of state" })),
  oauth_verifier: Schema.optional(InputString.annotations({ description: "OAuth 1.0a (twitter): the verifier, in place of code" })),
  denied: Schema.optional(InputString.annotations({ description: "OAuth 1.0a (twitter): the request token of a sign-in the user refused" })),
  user: Schema.optional(InputString.annotations({ description: "Apple: the user's name as JSON, posted on the first consent only" }))
})

/** What a provider posts back (Apple's form_post): its own fields too, which GoTrue ignores, and so does Gatehouse. */
const CallbackForm = CallbackParams.annotations({ jsonSchema: { additionalProperties: true } })

export const Found = (description: string) => Schema.Void.annotations({ description })

const CallbackRefusals = Schema.Union(
  AuthErrors.refused(400, ["bad_oauth_state", "bad_oauth_callback", "oauth_provider_not_supported", "validation_failed"],
    "When the flow cannot be told where to redirect (no state, or one that names no flow), the error is answered here, not in a redirect."),
  AuthErrors.refused(422, ["flow_state_expired"])
)

export const PROVIDERS = documented({ enum: [...OAUTH_PROVIDERS] }, "One of the providers this server knows (it must also be enabled)")

export class ExternalGroup extends HttpApiGroup.make("external")
  .add(
    HttpApiEndpoint.get("authorize", "/authorize")
      .setUrlParams(QueryParams({
        provider: Schema.optional(PROVIDERS),
        scopes: Schema.optional(InputString.annotations({ description: "Scopes beyond the provider's defaults, separated by spaces or commas" })),
        redirect_to: OptionalParam,
        code_challenge: Schema.optional(documented({ pattern: CODE_CHALLENGE_PATTERN })),
        code_challenge_method: Schema.optional(documented({ pattern: CHALLENGE_METHOD_PATTERN }))
      }, ["provider"]))
      .addSuccess(Found("Found: to the provider's sign-in page"), { status: 302 })
      .addError(AuthErrors.refused(400, ["validation_failed"], "A provider that is not enabled is 400 `validation_failed` \"Unsupported provider\", as in GoTrue."))
  )
  .add(
    HttpApiEndpoint.get("continueAuthorize", "/authorize/continue")
      .setUrlParams(QueryParams({ state: OptionalParam }))
      .addSuccess(
        Found(
          "Found: to the provider's sign-in page, with the flow now bound to this browser (the URL GET /user/identities/authorize hands out when SECURITY_OAUTH_BROWSER_BINDING_ENABLED), or to SITE_URL with the error in the fragment"
        ),
        { status: 302 }
      )
  )
  .add(
    HttpApiEndpoint.get("callback", "/callback")
      .setUrlParams(CallbackParams)
      .addSuccess(Found("Found: to redirect_to with the session (or `?code=` in the PKCE flow), or the error, in the fragment"), {
        status: 302
      })
      .addError(CallbackRefusals)
  )
  .add(
    HttpApiEndpoint.post("callbackPost", "/callback")
      .setUrlParams(CallbackParams)
      .setPayload(CallbackForm.pipe(HttpApiSchema.withEncoding({ kind: "UrlParams" })))
      .addSuccess(Found("Found: as GET /callback, for providers that post their answer (response_mode=form_post)"), { status: 302 })
      .addError(CallbackRefusals)
  )
  .annotate(OpenApi.Title, "External providers")
  .annotate(OpenApi.Description, "Sign-in with an external identity provider (OAuth 2.0 / OpenID Connect)") {}

/** The external sign-in slice on its own: what its handlers are built against (Api.ts composes ExternalGroup into AuthApi). */
export const ExternalApi = AuthApiBase.add(ExternalGroup)
