import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AdminAuthenticated } from "../contract/AdminAuthenticated.js"
import { Authenticated } from "../contract/Authenticated.js"
import { AuthApiBase } from "../contract/AuthApiBase.js"
import { RateLimited } from "../contract/CommonRefusals.js"
import { documented, InputString, OptionalParam, QueryParams } from "../contract/InputSchemas.js"
import { JsonObject } from "../contract/JsonObject.js"
import { AuthErrors } from "../http/AuthErrors.js"
import { OAuthServerEnabled } from "./OAuthServerEnabled.js"

// Pagination.parsePage's rules, as the admin users list documents them.
const PageParam = Schema.optional(documented({ pattern: "^[0-9]{0,15}$" }, "Default 1"))
const PerPageParam = Schema.optional(documented({ pattern: "^((?!0+$)[0-9]{1,15})?$" }, "Default 50, at most 1000"))

const Found = (description: string) => Schema.Void.annotations({ description })

const ServerMetadata = Schema.Struct({
  issuer: Schema.String,
  authorization_endpoint: Schema.String,
  token_endpoint: Schema.String,
  userinfo_endpoint: Schema.String,
  jwks_uri: Schema.String,
  registration_endpoint: Schema.optional(Schema.String),
  scopes_supported: Schema.Array(Schema.String),
  response_types_supported: Schema.Array(Schema.String),
  response_modes_supported: Schema.Array(Schema.String),
  grant_types_supported: Schema.Array(Schema.String),
  subject_types_supported: Schema.Array(Schema.String),
  id_token_signing_alg_values_supported: Schema.Array(Schema.String),
  token_endpoint_auth_methods_supported: Schema.Array(Schema.String),
  claims_supported: Schema.Array(Schema.String),
  code_challenge_methods_supported: Schema.Array(Schema.String)
}).annotations({ identifier: "OAuthServerMetadata", description: "RFC 8414 / OpenID Connect Discovery metadata" })

export const OAuthClient = Schema.Struct({
  client_id: Schema.String,
  client_secret: Schema.optional(Schema.String.annotations({ description: "Only when a confidential client is created or its secret regenerated" })),
  client_type: Schema.String,
  redirect_uris: Schema.Array(Schema.String),
  token_endpoint_auth_method: Schema.String,
  grant_types: Schema.Array(Schema.String),
  response_types: Schema.Array(Schema.String),
  client_name: Schema.optional(Schema.String),
  client_uri: Schema.optional(Schema.String),
  logo_uri: Schema.optional(Schema.String),
  registration_type: Schema.String,
  created_at: Schema.String,
  updated_at: Schema.String
}).annotations({ identifier: "OAuthClient" })

const strings = { type: "array", items: { type: "string" } }

/** Read by the service as GoTrue's decoder reads it: a field of the wrong type is 400 bad_json "Invalid JSON body". */
const ClientRegistration = Schema.Unknown.annotations({
  description: "A client registration (RFC 7591's fields that GoTrue reads)",
  jsonSchema: {
    type: "object",
    required: ["redirect_uris"],
    properties: {
      redirect_uris: { ...strings, minItems: 1, maxItems: 10, description: "Absolute URIs without a fragment; http only for localhost, 127.0.0.1 and ::1" },
      client_type: { type: "string", enum: ["public", "confidential"] },
      token_endpoint_auth_method: { type: "string", enum: ["none", "client_secret_basic", "client_secret_post"] },
      grant_types: { type: "array", items: { type: "string", enum: ["authorization_code", "refresh_token"] } },
      client_name: { type: "string", maxLength: 1024 },
      client_uri: { type: "string", maxLength: 2048 },
      logo_uri: { type: "string", maxLength: 2048 }
    }
  }
})

const ClientUpdate = Schema.Unknown.annotations({
  description: "The fields to change (at least one); client_type cannot change, \"\" clears a name or URI",
  jsonSchema: {
    type: "object",
    properties: {
      redirect_uris: { ...strings, minItems: 1, maxItems: 10 },
      grant_types: { type: "array", items: { type: "string", enum: ["authorization_code", "refresh_token"] }, minItems: 1 },
      client_name: { type: "string", maxLength: 1024 },
      client_uri: { type: "string", maxLength: 2048 },
      logo_uri: { type: "string", maxLength: 2048 },
      token_endpoint_auth_method: { type: "string", enum: ["none", "client_secret_basic", "client_secret_post"] }
    }
  }
})

const ClientDetails = Schema.Struct({
  id: Schema.String,
  name: Schema.optional(Schema.String),
  uri: Schema.optional(Schema.String),
  logo_uri: Schema.optional(Schema.String)
})

const AuthorizationDetails = Schema.Struct({
  authorization_id: Schema.String,
  redirect_uri: Schema.String,
  client: ClientDetails,
  user: Schema.Struct({ id: Schema.String, email: Schema.optional(Schema.String) }),
  scope: Schema.String
}).annotations({ identifier: "OAuthAuthorizationDetails" })

const RedirectUrl = Schema.Struct({ redirect_url: Schema.String }).annotations({ identifier: "OAuthRedirectUrl" })

const TokenResponse = Schema.Struct({
  access_token: Schema.String,
  token_type: Schema.Literal("bearer"),
  expires_in: Schema.Int,
  refresh_token: Schema.String,
  id_token: Schema.optional(Schema.String.annotations({ description: "When the scope has openid: signed with the server's asymmetric key (see the JWKS)" }))
}).annotations({ identifier: "OAuthTokenResponse" })

const ConsentBody = Schema.Unknown.annotations({
  jsonSchema: { type: "object", required: ["action"], properties: { action: { type: "string", enum: ["approve", "deny"] } } }
})

const AuthorizationIdParam = Schema.Struct({ authorization_id: InputString })
const ClientIdParam = Schema.Struct({ client_id: InputString })
const ConsentRefusals = Schema.Union(
  AuthErrors.refused(400, ["validation_failed"], "An Origin the redirect allow list refuses, or a request no longer pending."),
  AuthErrors.refused(404, ["oauth_authorization_not_found"], "Unknown, expired, locked by another request, or someone else's.")
)
const TokenRefusals = Schema.Union(
  AuthErrors.refused(400, ["invalid_credentials"], "Client authentication failed: GoTrue answers 400 with its HTTP error envelope, not 401."),
  AuthErrors.oauth(["invalid_request", "invalid_client", "invalid_grant", "unsupported_grant_type", "access_denied"])
)
/** GoTrue's rules on a client's fields (redirect URIs, grant types, URLs, type and method), each with its message. */
const ClientRefused = AuthErrors.refused(400, ["validation_failed"], "A field GoTrue's client rules refuse (an empty or non-https redirect URI, …).")
const NoSuchClient = Schema.Union(
  AuthErrors.refused(400, ["validation_failed"], "A client_id that is not a UUID, as GoTrue answers it."),
  AuthErrors.refused(404, ["oauth_client_not_found"])
)

export class OAuthDiscoveryGroup extends HttpApiGroup.make("oauthDiscovery")
  .add(
    HttpApiEndpoint.get("openidConfiguration", "/.well-known/openid-configuration")
      .addSuccess(ServerMetadata)
      .annotate(OpenApi.Description, "OpenID Connect discovery; served whether or not the OAuth server is on, as GoTrue does")
  )
  .add(
    HttpApiEndpoint.get("authorizationServer", "/.well-known/oauth-authorization-server")
      .addSuccess(ServerMetadata)
      .addError(AuthErrors.refused(404, ["feature_disabled"], "OAUTH_SERVER_ENABLED is off."))
      .annotate(OpenApi.Description, "RFC 8414 metadata, the same document")
  )
  .annotate(OpenApi.Title, "OAuth server: discovery")
  .annotate(OpenApi.Description, "Where the OAuth 2.1 / OpenID Connect server's endpoints are, and what it supports (Cache-Control: public, max-age=600)") {}

export class OAuthServerGroup extends HttpApiGroup.make("oauthServer")
  .add(
    HttpApiEndpoint.get("authorize", "/oauth/authorize")
      .setUrlParams(QueryParams({
        client_id: OptionalParam,
        redirect_uri: OptionalParam,
        response_type: OptionalParam,
        scope: OptionalParam,
        state: OptionalParam,
        resource: OptionalParam,
        code_challenge: OptionalParam,
        code_challenge_method: OptionalParam,
        nonce: OptionalParam
      }, ["client_id", "redirect_uri", "code_challenge", "code_challenge_method"]))
      .addSuccess(Found("Found: to SITE_URL + OAUTH_SERVER_AUTHORIZATION_PATH ?authorization_id=…, or back to the client's redirect_uri with error and error_description"), { status: 302 })
      .addError(AuthErrors.refused(400, ["validation_failed", "oauth_client_not_found"],
        "Without a trusted client and redirect_uri the error cannot be redirected, so it is answered here."))
      .addError(RateLimited)
      .annotate(OpenApi.Description,
        "The authorization code flow (PKCE required, S256 or plain; redirect_uri matched exactly); RATE_LIMIT_OAUTH_AUTHORIZE per client")
  )
  .add(
    HttpApiEndpoint.post("token", "/oauth/token")
      .addSuccess(TokenResponse)
      .addError(TokenRefusals)
      .annotate(OpenApi.Description,
        "Body (application/x-www-form-urlencoded, or JSON): grant_type (authorization_code or refresh_token), code, redirect_uri, " +
          "code_verifier, refresh_token, resource; the client authenticates with HTTP Basic (client_secret_basic, id and secret " +
          "form-url-encoded as RFC 6749 §2.3.1 says; GoTrue does not decode them), with client_id and client_secret in the body " +
          "(client_secret_post), or with client_id alone (a public client). Cache-Control: no-store.")
  )
  .add(
    HttpApiEndpoint.get("userinfo", "/oauth/userinfo")
      .addSuccess(JsonObject.annotations({ description: "sub, and the claims the session's scopes allow (email, profile, phone)" }))
      .middleware(Authenticated)
  )
  .add(
    HttpApiEndpoint.get("authorizationDetails", "/oauth/authorizations/:authorization_id")
      .setPath(AuthorizationIdParam)
      .addSuccess(Schema.Union(AuthorizationDetails, RedirectUrl))
      .addError(ConsentRefusals)
      .middleware(Authenticated)
      .annotate(OpenApi.Description,
        "What the consent page shows; the first caller claims the request. When the user already consented to every requested scope, " +
          "the request is approved at once and the answer is only the redirect_url with the code.")
  )
  .add(
    HttpApiEndpoint.post("consent", "/oauth/authorizations/:authorization_id/consent")
      .setPath(AuthorizationIdParam)
      .setPayload(ConsentBody)
      .addSuccess(RedirectUrl)
      .addError(ConsentRefusals)
      .middleware(Authenticated)
      .annotate(OpenApi.Description, "Approve (the redirect_url carries the code and state) or deny (access_denied)")
  )
  .add(
    HttpApiEndpoint.post("register", "/oauth/clients/register")
      .setPayload(ClientRegistration)
      .addSuccess(OAuthClient, { status: 201 })
      .addError(RateLimited)
      .addError(ClientRefused)
      .addError(AuthErrors.refused(403, ["oauth_dynamic_client_registration_disabled"]))
      .annotate(OpenApi.Description,
        "Dynamic client registration (RFC 7591) when OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION; RATE_LIMIT_OAUTH_DYNAMIC_CLIENT_REGISTER per client")
  )
  // Added last, so it runs first: before the bearer check (HttpApi runs the last middleware outermost).
  .middlewareEndpoints(OAuthServerEnabled)
  .annotate(OpenApi.Title, "OAuth server")
  .annotate(OpenApi.Description,
    "Gatehouse as an OAuth 2.1 / OpenID Connect identity provider (OAUTH_SERVER_ENABLED; otherwise every route is 404 feature_disabled). " +
      "The consent routes and userinfo need `Authorization: Bearer <access token>`.") {}

export class OAuthGrantsGroup extends HttpApiGroup.make("oauthGrants")
  .add(
    HttpApiEndpoint.get("listGrants", "/user/oauth/grants")
      .addSuccess(Schema.Array(Schema.Struct({ client: ClientDetails, scopes: Schema.Array(Schema.String), granted_at: Schema.String })))
      .annotate(OpenApi.Description, "The clients the user consented to, newest first")
  )
  .add(
    HttpApiEndpoint.del("revokeGrant", "/user/oauth/grants")
      .setUrlParams(QueryParams({ client_id: OptionalParam }, ["client_id"]))
      .addSuccess(Schema.Void, { status: 204 })
      .addError(AuthErrors.refused(404, ["oauth_consent_not_found"]))
      .annotate(OpenApi.Description, "Revokes the consent and ends the sessions the client holds for the user")
  )
  .middleware(OAuthServerEnabled)
  .middleware(Authenticated)
  .annotate(OpenApi.Title, "OAuth server: the user's grants")
  .annotate(OpenApi.Description, "Needs `Authorization: Bearer <access token>` (checked before OAUTH_SERVER_ENABLED, as in GoTrue)") {}

export class AdminOAuthClientsGroup extends HttpApiGroup.make("adminOAuthClients")
  .add(
    HttpApiEndpoint.post("createClient", "/admin/oauth/clients")
      .setPayload(ClientRegistration)
      .addSuccess(OAuthClient, { status: 201 })
      .addError(ClientRefused)
      .annotate(OpenApi.Description, "Registers a client (registration_type manual). A refusal's message starts with `400: `, as GoTrue's does.")
  )
  .add(
    HttpApiEndpoint.get("listClients", "/admin/oauth/clients")
      .setUrlParams(QueryParams({ page: PageParam, per_page: PerPageParam }))
      .addSuccess(Schema.Struct({ clients: Schema.Array(OAuthClient) }))
      .annotate(OpenApi.Description, "Clients not deleted, newest first; with page or per_page, one page and the Link and X-Total-Count headers")
  )
  .add(HttpApiEndpoint.get("getClient", "/admin/oauth/clients/:client_id").setPath(ClientIdParam).addSuccess(OAuthClient).addError(NoSuchClient))
  .add(
    HttpApiEndpoint.put("updateClient", "/admin/oauth/clients/:client_id")
      .setPath(ClientIdParam)
      .setPayload(ClientUpdate)
      .addSuccess(OAuthClient)
      .addError(ClientRefused)
      .addError(NoSuchClient)
  )
  .add(
    HttpApiEndpoint.del("deleteClient", "/admin/oauth/clients/:client_id")
      .setPath(ClientIdParam)
      .addSuccess(Schema.Void, { status: 204 })
      .addError(NoSuchClient)
      .annotate(OpenApi.Description, "Soft delete: the client stops working; its consents and sessions are kept")
  )
  .add(
    HttpApiEndpoint.post("regenerateSecret", "/admin/oauth/clients/:client_id/regenerate_secret")
      .setPath(ClientIdParam)
      .addSuccess(OAuthClient)
      .addError(NoSuchClient)
      .annotate(OpenApi.Description, "A new secret for a confidential client; the old one stops working at once")
  )
  .middleware(OAuthServerEnabled)
  .middleware(AdminAuthenticated)
  .annotate(OpenApi.Title, "Admin: OAuth clients")
  .annotate(OpenApi.Description, "The OAuth server's clients: each call needs `Authorization: Bearer <admin JWT>` (checked before OAUTH_SERVER_ENABLED, as in GoTrue)") {}

/**
 * Any text in each field (no NUL rule, unlike InputString): the fields are only compared and verified, never stored,
 * so every token is answered (a NUL makes one inactive), and the service role's call reads no client field at all.
 */
const IntrospectionForm = Schema.Struct({
  token: Schema.String.annotations({ description: "The token to look at: an access token (a refresh token is answered inactive)" }),
  token_type_hint: Schema.optional(Schema.String.annotations({ description: "access_token or refresh_token; read as a hint only (RFC 7662 §2.1)" })),
  client_id: Schema.optional(Schema.String.annotations({ description: "client_secret_post: the OAuth client's id" })),
  client_secret: Schema.optional(Schema.String.annotations({ description: "client_secret_post: the OAuth client's secret" }))
}).pipe(HttpApiSchema.withEncoding({ kind: "UrlParams" }))

const Introspection = Schema.Struct({
  active: Schema.Boolean,
  token_type: Schema.optional(Schema.Literal("access_token")),
  sub: Schema.optional(Schema.String),
  exp: Schema.optional(Schema.Int),
  iat: Schema.optional(Schema.Int),
  iss: Schema.optional(Schema.String),
  aud: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))),
  scope: Schema.optional(Schema.String.annotations({ description: "An OAuth client's token: the scopes granted, space-separated" })),
  client_id: Schema.optional(Schema.String.annotations({ description: "An OAuth client's token: the client it was issued to" })),
  session_id: Schema.optional(Schema.String),
  aal: Schema.optional(Schema.String),
  role: Schema.optional(Schema.String),
  username: Schema.optional(Schema.String.annotations({ description: "The user's email address as it is now" }))
}).annotations({
  identifier: "TokenIntrospection",
  description: "RFC 7662: `{\"active\": false}` and nothing else for any token that is not a live access token"
})

export class OAuthIntrospectionGroup extends HttpApiGroup.make("oauthIntrospection")
  .add(
    HttpApiEndpoint.post("introspect", "/oauth/introspect")
      .setPayload(IntrospectionForm)
      .addSuccess(Introspection)
      .addError(AuthErrors.oauth(["invalid_request"], "No token, or a body that cannot be read."))
      .addError(AuthErrors.oauthAt(401, ["invalid_client"], "The caller is neither the service role nor an OAuth client with valid credentials."))
      .annotate(OpenApi.Description,
        "Token introspection (RFC 7662) for resource servers. An access token is active while its signature and expiry hold " +
          "and its session lives: after a logout, refresh-token reuse, a ban or the user's deletion it is `{\"active\": false}` " +
          "at once. Refresh tokens, API keys (no session), ID tokens and anything unknown are `{\"active\": false}` too. " +
          "The caller authenticates with `Authorization: Bearer <service_role key>` (any JWT_ADMIN_ROLES role, as the admin API; " +
          "served whether or not OAUTH_SERVER_ENABLED), or, while the OAuth server is on, as a confidential OAuth client: HTTP " +
          "Basic (client_secret_basic) or client_id and client_secret in the form (client_secret_post). Body: " +
          "application/x-www-form-urlencoded (or JSON). Cache-Control: no-store.")
  )
  .annotate(OpenApi.Title, "OAuth server: token introspection")
  .annotate(OpenApi.Description, "RFC 7662 token introspection, for resource servers and API gateways") {}

/** The OAuth server slice on its own: what its handlers are built against (Api.ts composes the groups into AuthApi). */
export const OAuthServerApi = AuthApiBase.add(OAuthDiscoveryGroup).add(OAuthServerGroup).add(OAuthIntrospectionGroup).add(OAuthGrantsGroup)
  .add(AdminOAuthClientsGroup)
