import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { compileAllowList } from "../../domain/RedirectAllowList.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { TokenSigner } from "../../platform/TokenSigner.js"
import { AuthError } from "../domain/AuthError.js"
import {
  type ClientAuthMethod,
  clientAuthProblem,
  hashClientSecret,
  parseBasicCredentials,
  type PresentedCredentials,
  UUID_PATTERN
} from "../domain/ClientCredentials.js"
import { fitsAuthorizationColumns, type OAuthAuthorizationRequest } from "../domain/OAuthAuthorizationRequest.js"
import { idTokenClaims, userInfoClaims } from "../domain/OAuthClaims.js"
import { clientDetails, clientJson, splitList } from "../domain/OAuthClientJson.js"
import {
  decideRegistration,
  readRegisterBody,
  readUpdateBody,
  registerProblem,
  registerRefusal,
  updateProblem
} from "../domain/OAuthClientRules.js"
import { errorRedirect, successRedirect } from "../domain/OAuthRedirect.js"
import { resourceProblem } from "../domain/OAuthRedirectUri.js"
import { coversScopes, hasScope, parseScopes, scopeProblem } from "../domain/OAuthScopes.js"
import { type OAuthTokenRequest, readTokenBody, type TokenFields } from "../domain/OAuthTokenRequest.js"
import { oauthPkceProblem, type PkceChallenge, verifierMatches } from "../domain/Pkce.js"
import { allowedRedirect } from "../domain/RedirectTo.js"
import { isBanned, type UserRow } from "../domain/UserRow.js"
import { AccessTokens } from "../sessions/AccessTokens.js"
import { SessionGrantsRepo } from "../sessions/SessionGrantsRepo.js"
import { Sessions } from "../sessions/Sessions.js"
import { AuditLog } from "../users/AuditLog.js"
import { UsersRepo } from "../users/UsersRepo.js"
import { type OAuthAuthorizationRow, type OAuthClientRow, OAuthServerRepo } from "./OAuthServerRepo.js"
import { traced } from "../../platform/Traced.js"

export interface OAuthTokenResponse {
  readonly access_token: string
  readonly token_type: "bearer"
  readonly expires_in: number
  readonly refresh_token: string
  readonly id_token?: string
}

const invalidCredentials = (message: string) => AuthError.of(400, "invalid_credentials", message)
const authorizationNotFound = () => AuthError.of(404, "oauth_authorization_not_found", "authorization not found")
const clientNotFound = () => AuthError.of(404, "oauth_client_not_found", "OAuth client not found")
const invalidGrant = (message: string) => AuthError.oauth("invalid_grant", message)

/** Base32 (RFC 4648, lower case) of random bytes: GoTrue's authorization ids are 32 such characters. */
const BASE32 = "abcdefghijklmnopqrstuvwxyz234567"

/**
 * Gatehouse as an OAuth 2.1 / OpenID Connect provider (GoTrue's internal/api/oauthserver): client registration,
 * the authorization request and its consent, the token endpoint, userinfo and the user's grants, each check in
 * GoTrue's order with GoTrue's words. Sessions it starts are Gatehouse sessions marked with their client and scopes.
 */
export class OAuthServer extends Effect.Service<OAuthServer>()("auth/OAuthServer", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const platform = yield* PlatformConfig
    const random = yield* SecureRandom
    const transactions = yield* Transactions
    const repo = yield* OAuthServerRepo
    const users = yield* UsersRepo
    const sessions = yield* Sessions
    const tokens = yield* AccessTokens
    const signer = yield* TokenSigner
    const audit = yield* AuditLog
    const sessionGrants = yield* SessionGrantsRepo
    const settings = config.oauthServer
    const allowList = compileAllowList(config.uriAllowList)
    // The issuer access tokens carry (AccessTokens: JWT_ISSUER, else the external URL): ID tokens and discovery agree.
    const issuer = Option.getOrElse(config.jwt.issuer, () => platform.api.externalUrl)
    const base = issuer.replace(/\/+$/, "")
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
    const commit = <A, E, R>(effect: Effect.Effect<A, E, R>) => transactions.run(effect).pipe(Effect.catchTag("SqlError", Effect.die))

    const newSecret = Effect.map(random.bytes(32), (bytes) => bytes.toString("base64url"))
    const newAuthorizationId = Effect.map(random.bytes(32), (bytes) => [...bytes].map((b) => BASE32[b % 32]).join(""))

    // ---- discovery -------------------------------------------------------------------------------------------------

    /** GoTrue lists RS256, HS256 and ES256; a client checks the ID token's alg against the list, so Gatehouse's own is added. */
    const algorithms = ["RS256", "HS256", "ES256", ...(["RS256", "HS256", "ES256"].includes(signer.signingAlgorithm) ? [] : [signer.signingAlgorithm])]

    const metadata = () => ({
      issuer,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      userinfo_endpoint: `${base}/oauth/userinfo`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      ...(settings.enabled && settings.allowDynamicRegistration ? { registration_endpoint: `${base}/oauth/clients/register` } : {}),
      scopes_supported: ["openid", "profile", "email", "phone", "offline_access"],
      response_types_supported: ["code"],
      response_modes_supported: ["query"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      subject_types_supported: ["public"],
      id_token_signing_alg_values_supported: algorithms,
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      claims_supported: [
        "sub", "aud", "iss", "exp", "iat", "auth_time", "nonce", "email", "email_verified", "phone_number",
        "phone_number_verified", "name", "picture", "preferred_username", "updated_at"
      ],
      code_challenge_methods_supported: ["S256", "plain"]
    })

    // ---- clients ---------------------------------------------------------------------------------------------------

    const register = traced("OAuthServer.register")(function*(body: unknown, registrationType: "dynamic" | "manual") {
      const params = readRegisterBody(body)
      if (params === undefined) return yield* AuthError.of(400, "bad_json", "Invalid JSON body")
      const problem = registerProblem(params)
      if (problem !== undefined) return yield* AuthError.validation(registerRefusal(problem))
      const { clientType, grantTypes, method } = decideRegistration(params)
      const secret = clientType === "confidential" ? yield* newSecret : undefined
      const row = yield* repo.insertClient({
        id: yield* random.uuid(),
        secretHash: secret === undefined ? null : hashClientSecret(secret),
        registrationType,
        redirectUris: params.redirectUris,
        grantTypes,
        clientName: params.clientName,
        clientUri: params.clientUri,
        logoUri: params.logoUri,
        clientType,
        method,
        now: yield* now
      })
      return clientJson(row, secret)
    })

    /** The client an admin route found, or its 404. */
    const foundClient = Option.match({ onNone: () => Effect.fail(clientNotFound()), onSome: (row: OAuthClientRow) => Effect.succeed(row) })

    /** GoTrue's LoadOAuthServerClient for the admin routes. */
    const loadClient = (clientId: string) =>
      UUID_PATTERN.test(clientId)
        ? Effect.flatMap(repo.findClient(clientId.toLowerCase()), foundClient)
        : Effect.fail(AuthError.validation("invalid client_id format"))

    const getClient = traced("OAuthServer.getClient")(function*(clientId: string) {
      return clientJson(yield* loadClient(clientId))
    })

    const listClients = traced("OAuthServer.listClients")(function*(page: { readonly page: number; readonly perPage: number } | undefined) {
      const found = yield* repo.listClients(page === undefined ? undefined : { limit: page.perPage, offset: (page.page - 1) * page.perPage })
      return { clients: found.clients.map((row) => clientJson(row)), total: found.total }
    })

    const updateClient = traced("OAuthServer.updateClient")(function*(clientId: string, body: unknown) {
      const client = yield* loadClient(clientId)
      const params = readUpdateBody(body)
      if (params === undefined) return yield* AuthError.of(400, "bad_json", "Invalid JSON body")
      const problem = updateProblem(params, client.client_type)
      if (problem !== undefined) return yield* AuthError.validation(problem)
      const updated = yield* repo.updateClient(client.id, params, yield* now)
      return clientJson(yield* foundClient(updated))
    })

    const deleteClient = traced("OAuthServer.deleteClient")(function*(clientId: string) {
      const client = yield* loadClient(clientId)
      yield* repo.deleteClient(client.id, yield* now)
    })

    const regenerateSecret = traced("OAuthServer.regenerateSecret")(function*(clientId: string) {
      const client = yield* loadClient(clientId)
      if (client.client_type !== "confidential") return yield* AuthError.validation("Cannot regenerate secret for public client")
      const secret = yield* newSecret
      const updated = yield* repo.setClientSecret(client.id, hashClientSecret(secret), yield* now)
      return clientJson(yield* foundClient(updated), secret)
    })

    // ---- authorization ---------------------------------------------------------------------------------------------

    /** GET /oauth/authorize: the Location to send the browser to (the consent page, or the client with an error). */
    const authorize = traced("OAuthServer.authorize")(function*(request: OAuthAuthorizationRequest) {
      if (request.client_id === "") return yield* AuthError.validation("client_id is required")
      if (request.redirect_uri === "") return yield* AuthError.validation("redirect_uri is required")
      if (!UUID_PATTERN.test(request.client_id)) return yield* AuthError.of(400, "oauth_client_not_found", "invalid client_id format")
      const found = yield* repo.findClient(request.client_id.toLowerCase())
      if (Option.isNone(found)) return yield* AuthError.of(400, "oauth_client_not_found", "invalid client_id")
      const client = found.value
      if (!splitList(client.redirect_uris).includes(request.redirect_uri)) return yield* AuthError.validation("invalid redirect_uri")
      const refuse = (error: string, description: string) => errorRedirect(request.redirect_uri, error, description, request.state)
      const responseType = request.response_type === "" ? "code" : request.response_type
      const scope = request.scope === "" ? settings.defaultScope : request.scope
      if (responseType !== "code") return refuse("invalid_request", "only response_type=code is supported")
      const problem = scopeProblem(scope) ?? resourceProblem(request.resource) ?? oauthPkceProblem(request.code_challenge, request.code_challenge_method)
      if (problem !== undefined) return refuse("invalid_request", problem)
      if (!fitsAuthorizationColumns({ ...request, scope })) return refuse("server_error", "error creating authorization")
      // GoTrue stores the request and then finds it has nowhere to send the user; checked first here, same answer.
      if (settings.authorizationPath === "") return refuse("server_error", "oauth authorization path not configured")
      const at = yield* now
      const authorizationId = yield* newAuthorizationId
      yield* repo.insertAuthorization({
        id: yield* random.uuid(),
        authorizationId,
        clientId: client.id,
        redirectUri: request.redirect_uri,
        scope,
        state: request.state,
        resource: request.resource,
        codeChallenge: request.code_challenge,
        codeChallengeMethod: request.code_challenge_method.toLowerCase(),
        nonce: request.nonce,
        now: at,
        expiresAt: new Date(at.getTime() + Duration.toMillis(settings.authorizationTtl))
      })
      const path = settings.authorizationPath.startsWith("/") ? settings.authorizationPath : `/${settings.authorizationPath}`
      return `${config.siteUrl.replace(/\/+$/, "")}${path}?authorization_id=${authorizationId}`
    })

    /** The consent API's Origin rule: a browser's Origin must be one the redirect allow list accepts. */
    const checkOrigin = (origin: string | undefined): Effect.Effect<void, AuthError> =>
      origin === undefined || origin === "" || allowedRedirect(origin, config.siteUrl, allowList) !== undefined
        ? Effect.void
        : Effect.fail(AuthError.validation("unauthorized request origin"))

    type Refused = { readonly _tag: "Refused"; readonly error: AuthError }
    type Locked = { readonly _tag: "Row"; readonly row: OAuthAuthorizationRow } | Refused

    /** The row locked, or the refusal; an expired pending row is marked expired (and that is committed). */
    const lockLive = (authorizationId: string, at: Date) =>
      Effect.gen(function*() {
        // A NUL matches no id and PostgreSQL refuses it in text: not found, before any statement.
        if (authorizationId.includes("\u0000")) return { _tag: "Refused", error: authorizationNotFound() } as Locked
        const found = yield* repo.lockAuthorization(authorizationId)
        if (Option.isNone(found)) return { _tag: "Refused", error: authorizationNotFound() } as Locked
        const row = found.value
        if (row.expires_at.getTime() <= at.getTime()) {
          yield* repo.markExpired(row.id)
          return { _tag: "Refused", error: authorizationNotFound() } as Locked
        }
        return { _tag: "Row", row } as Locked
      })

    /** GET /oauth/authorizations/{id}: the request's details for the consent page, or a redirect when already consented. */
    const details = traced("OAuthServer.details")(function*(user: UserRow, authorizationId: string, origin: string | undefined) {
      yield* checkOrigin(origin)
      const at = yield* now
      type Outcome =
        | Refused
        | { readonly _tag: "Approved"; readonly redirect: string }
        | { readonly _tag: "Pending"; readonly row: OAuthAuthorizationRow }
      const outcome: Outcome = yield* commit(Effect.gen(function*() {
        const locked = yield* lockLive(authorizationId, at)
        if (locked._tag === "Refused") return locked
        const row = locked.row
        if (row.status !== "pending") {
          return { _tag: "Refused", error: AuthError.validation("authorization request cannot be processed") } as Outcome
        }
        if (row.user_id === null) {
          yield* repo.setAuthorizationUser(row.id, user.id)
          const consent = yield* repo.activeConsent(user.id, row.client_id)
          if (Option.isSome(consent) && coversScopes(consent.value.scopes, row.scope)) {
            const code = yield* random.uuid()
            yield* repo.approve(row.id, code, at)
            return { _tag: "Approved", redirect: successRedirect(row.redirect_uri, code, row.state) } as Outcome
          }
        } else if (row.user_id !== user.id) {
          return { _tag: "Refused", error: authorizationNotFound() } as Outcome
        }
        return { _tag: "Pending", row } as Outcome
      }))
      if (outcome._tag === "Refused") return yield* outcome.error
      if (outcome._tag === "Approved") return { redirect_url: outcome.redirect }
      const client = yield* repo.findClient(outcome.row.client_id)
      if (Option.isNone(client)) return yield* authorizationNotFound()
      return {
        authorization_id: outcome.row.authorization_id,
        redirect_uri: outcome.row.redirect_uri,
        client: clientDetails(client.value),
        user: { id: user.id, ...(user.email === null || user.email === "" ? {} : { email: user.email }) },
        scope: outcome.row.scope
      }
    })

    /** POST /oauth/authorizations/{id}/consent. */
    const consent = traced("OAuthServer.consent")(function*(user: UserRow, authorizationId: string, body: unknown, origin: string | undefined) {
      yield* checkOrigin(origin)
      if (typeof body !== "object" || body === null || Array.isArray(body)) return yield* AuthError.of(400, "bad_json", "invalid JSON body")
      const action = (body as Record<string, unknown>)["action"]
      if (action !== undefined && action !== null && typeof action !== "string") return yield* AuthError.of(400, "bad_json", "invalid JSON body")
      if (action !== "approve" && action !== "deny") return yield* AuthError.validation("action must be 'approve' or 'deny'")
      const at = yield* now
      type Outcome = Refused | { readonly _tag: "Done"; readonly redirect: string }
      const outcome: Outcome = yield* commit(Effect.gen(function*() {
        const locked = yield* lockLive(authorizationId, at)
        if (locked._tag === "Refused") return locked
        const row = locked.row
        if (row.status !== "pending") return { _tag: "Refused", error: AuthError.validation("authorization request is no longer pending") } as Outcome
        if (row.user_id !== user.id) return { _tag: "Refused", error: authorizationNotFound() } as Outcome
        if (action === "approve") {
          const code = yield* random.uuid()
          yield* repo.approve(row.id, code, at)
          // Each scope once: a request may name one many times, and the column holds 2048 characters.
          yield* repo.upsertConsent(yield* random.uuid(), user.id, row.client_id, [...new Set(parseScopes(row.scope))].join(" "), at)
          return { _tag: "Done", redirect: successRedirect(row.redirect_uri, code, row.state) } as Outcome
        }
        yield* repo.deny(row.id)
        return { _tag: "Done", redirect: errorRedirect(row.redirect_uri, "access_denied", "User denied the request", row.state) } as Outcome
      }))
      if (outcome._tag === "Refused") return yield* outcome.error
      return { redirect_url: outcome.redirect }
    })

    // ---- token endpoint --------------------------------------------------------------------------------------------

    /**
     * GoTrue's requireOAuthClientAuth: the client, or undefined when the request named none (Basic with an empty id).
     * Token introspection authenticates its OAuth callers with it too.
     */
    const authenticateClient = (request: OAuthTokenRequest): Effect.Effect<OAuthClientRow | undefined, AuthError> =>
      Effect.gen(function*() {
        let presented: PresentedCredentials
        if (request.authorization !== undefined && request.authorization.startsWith("Basic ")) {
          const basic = parseBasicCredentials(request.authorization)
          if ("problem" in basic) return yield* invalidCredentials(`Invalid client credentials: ${basic.problem}`)
          presented = { clientId: basic.id, clientSecret: basic.secret, method: "client_secret_basic" }
        } else {
          // GoTrue's middleware decodes only the two fields it reads: another field of the wrong type is the handler's.
          const body = readTokenBody(request, ["client_id", "client_secret"])
          if (body === "bad_json") return yield* invalidCredentials("Invalid client credentials: failed to parse JSON body")
          if (body === "bad_form") return yield* invalidCredentials("Invalid client credentials: failed to parse form")
          if (body.client_id === "") return yield* invalidCredentials("Invalid client credentials: client_id is required")
          const method: ClientAuthMethod = body.client_secret === "" ? "none" : "client_secret_post"
          presented = { clientId: body.client_id, clientSecret: body.client_secret, method }
        }
        if (presented.clientId === "") return undefined
        if (!UUID_PATTERN.test(presented.clientId)) return yield* invalidCredentials("Invalid client_id format")
        const found = yield* repo.findClient(presented.clientId.toLowerCase())
        if (Option.isNone(found)) return yield* invalidCredentials("Invalid client credentials")
        const problem = clientAuthProblem(found.value, presented)
        if (problem !== undefined) return yield* invalidCredentials(problem)
        return found.value
      })

    /** POST /oauth/token. */
    const token = traced("OAuthServer.token")(function*(request: OAuthTokenRequest) {
      const client = yield* authenticateClient(request)
      const fields = readTokenBody(request)
      if (fields === "bad_json") return yield* AuthError.oauth("invalid_request", "Invalid JSON body")
      if (fields === "bad_form") return yield* AuthError.oauth("invalid_request", "Failed to parse form data")
      if (fields.grant_type === "") return yield* AuthError.oauth("invalid_request", "grant_type is required")
      if (client === undefined) return yield* AuthError.oauth("invalid_client", "Client authentication required")
      if (!splitList(client.grant_types).includes(fields.grant_type)) {
        return yield* AuthError.oauth("unsupported_grant_type", `Client is not allowed to use grant type: ${fields.grant_type}`)
      }
      switch (fields.grant_type) {
        case "authorization_code":
          return yield* exchangeCode(client, fields)
        case "refresh_token":
          return yield* refreshGrant(client, fields.refresh_token)
        default:
          return yield* AuthError.oauth("unsupported_grant_type", `Unsupported grant type: ${fields.grant_type}`)
      }
    })

    const exchangeCode = (client: OAuthClientRow, fields: TokenFields) =>
      Effect.gen(function*() {
        if (fields.code === "") return yield* AuthError.oauth("invalid_request", "code is required for authorization_code grant")
        // Codes are UUIDs (GoTrue's too): anything else matches no row, and text such as a NUL is not for SQL.
        if (!UUID_PATTERN.test(fields.code)) return yield* invalidGrant("Invalid authorization code")
        const found = yield* repo.findByCode(fields.code)
        if (Option.isNone(found)) return yield* invalidGrant("Invalid authorization code")
        const authorization = found.value
        const at = yield* now
        if (authorization.expires_at.getTime() <= at.getTime()) return yield* invalidGrant("Authorization code has expired")
        if (authorization.client_id !== client.id) return yield* invalidGrant("Authorization code was not issued for this client")
        if (fields.resource !== "" && fields.resource !== (authorization.resource ?? "")) {
          return yield* invalidGrant("Authorization code resource does not match the resource parameter")
        }
        if (fields.redirect_uri !== "" && fields.redirect_uri !== authorization.redirect_uri) return yield* invalidGrant("Invalid redirect_uri")
        if (authorization.code_challenge !== null && authorization.code_challenge !== "") {
          if (fields.code_verifier === "") {
            return yield* invalidGrant("PKCE verification failed: code_verifier is required when PKCE challenge is present")
          }
          const method = (authorization.code_challenge_method ?? "plain").toLowerCase() === "s256" ? "s256" : "plain"
          const stored: PkceChallenge = { challenge: authorization.code_challenge, method }
          if (!verifierMatches(fields.code_verifier, stored)) {
            return yield* invalidGrant("PKCE verification failed: code challenge does not match previously saved code verifier")
          }
        }
        if (authorization.user_id === null) return yield* invalidGrant("Authorization code has no associated user")
        const user = yield* users.findById(authorization.user_id)
        if (Option.isNone(user)) return yield* invalidGrant("User not found for authorization code")
        if (isBanned(user.value, at)) return yield* AuthError.oauth("access_denied", "User is banned")
        const openid = hasScope(authorization.scope, "openid")
        // GoTrue finds out after spending the code; checked before here, so the code stays usable.
        if (openid && signer.signingAlgorithm === "HS256") {
          yield* Effect.logWarning("an ID token was asked for but the JWT signing key is HS256: configure an asymmetric JWT key")
          return yield* AuthError.of(500, "unexpected_failure", "Error generating ID token")
        }
        const started = yield* commit(Effect.gen(function*() {
          if (!(yield* repo.consumeAuthorization(authorization.id))) return undefined
          const session = yield* sessions.start(user.value.id, "oauth_provider/authorization_code", at)
          yield* sessionGrants.markSession(session.sessionId, client.id, authorization.scope)
          yield* audit.record("login", {
            actor: session.user,
            traits: { provider_type: "oauth_provider_authorization_code", client_id: client.id }
          })
          return session
        }))
        if (started === undefined) return yield* invalidGrant("Invalid authorization code")
        const session = yield* tokens.respond({ ...started, oauth: { client_id: client.id, scope: authorization.scope } })
        const iat = Math.floor(at.getTime() / 1000)
        const idToken = openid
          ? yield* signer.sign(idTokenClaims({
            user: started.user,
            issuer,
            clientId: client.id,
            scopes: authorization.scope,
            nonce: authorization.nonce,
            authTime: started.user.last_sign_in_at === null ? iat : Math.floor(started.user.last_sign_in_at.getTime() / 1000),
            iat
          }))
          : undefined
        return {
          access_token: session.access_token,
          token_type: "bearer",
          expires_in: session.expires_in,
          refresh_token: session.refresh_token,
          ...(idToken === undefined ? {} : { id_token: idToken })
        } satisfies OAuthTokenResponse
      })

    const refreshGrant = (client: OAuthClientRow, refreshToken: string) =>
      Effect.gen(function*() {
        if (refreshToken === "") return yield* AuthError.oauth("invalid_request", "refresh_token is required for refresh_token grant")
        // The session's client is checked on the locked session, in GoTrue's order (Sessions.refresh).
        const session = yield* tokens.respond(yield* sessions.refresh(refreshToken, yield* now, client.id))
        return {
          access_token: session.access_token,
          token_type: "bearer",
          expires_in: session.expires_in,
          refresh_token: session.refresh_token
        } satisfies OAuthTokenResponse
      })

    // ---- userinfo and grants ---------------------------------------------------------------------------------------

    const userInfo = traced("OAuthServer.userInfo")(function*(user: UserRow, sessionId: string | undefined) {
      const grant = sessionId === undefined ? Option.none() : yield* sessionGrants.sessionGrant(sessionId)
      return userInfoClaims(user, Option.match(grant, { onNone: () => null, onSome: (g) => g.scopes }))
    })

    const grants = traced("OAuthServer.grants")(function*(user: UserRow) {
      const rows = yield* repo.grantsOf(user.id)
      return rows.map((row) => ({
        client: clientDetails({ id: row.client_id, client_name: row.client_name, client_uri: row.client_uri, logo_uri: row.logo_uri }),
        scopes: parseScopes(row.scopes),
        granted_at: row.granted_at.toISOString()
      }))
    })

    const revokeGrant = traced("OAuthServer.revokeGrant")(function*(user: UserRow, clientId: string) {
      if (clientId === "") return yield* AuthError.validation("client_id query parameter is required")
      if (!UUID_PATTERN.test(clientId)) return yield* AuthError.validation("invalid client_id format")
      const at = yield* now
      const revoked = yield* commit(Effect.gen(function*() {
        const done = yield* repo.revokeConsent(user.id, clientId.toLowerCase(), at)
        if (done) yield* audit.record("token_revoked", { actor: user, traits: { oauth_client_id: clientId.toLowerCase(), action: "revoke_oauth_grant" } })
        return done
      }))
      if (!revoked) return yield* AuthError.of(404, "oauth_consent_not_found", "No active grant found for this client")
    })

    return {
      metadata, register, getClient, listClients, updateClient, deleteClient, regenerateSecret, authorize, details, consent, token,
      userInfo, grants, revokeGrant, authenticateClient
    } as const
  }),
  dependencies: [OAuthServerRepo.Default, SessionGrantsRepo.Default, UsersRepo.Default, AuditLog.Default, Transactions.Live]
}) {}
