/**
 * Gatehouse as an OAuth 2.1 / OpenID Connect provider (issue 29), through clients nobody here wrote: auth-js's
 * admin.oauth.* and oauth.* (the consent API an app's consent page calls), and openid-client v6 as a third-party
 * app: discovery, the code flow with PKCE, tokens, userinfo, refresh, and the ID token verified against the JWKS,
 * with each of the three client authentication methods. Then the token endpoint's refusals, in GoTrue's words.
 */
import { createHash, generateKeyPairSync, randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, expect } from "@effect/vitest"
import { Effect } from "effect"
import { createRemoteJWKSet, jwtVerify } from "jose"
import * as oidc from "openid-client"
import { ExpiredOAuthAuthorizations } from "../../../src/auth/oauthserver/ExpiredOAuthAuthorizations.js"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, adminJwt, authClient, call, decodeJwt, expectingErrors, legacyError, PASSWORD, raw, uniqueEmail, versionedError } from "./AcceptanceKit.js"

const SITE = "https://app.example.com"
const ISSUER = "http://localhost:9999"
const CALLBACK = "https://client.example.com/callback"
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
const KID = "gatehouse-oauth-rs256"
const signingJwk = { ...privateKey.export({ format: "jwk" }), kid: KID, alg: "RS256", use: "sig", key_ops: ["sign"] }

const env = {
  AUTH_SITE_URL: SITE,
  AUTH_MAILER_AUTOCONFIRM: "true",
  AUTH_JWT_KEYS: JSON.stringify([signingJwk]),
  AUTH_OAUTH_SERVER_ENABLED: "true",
  AUTH_OAUTH_SERVER_AUTHORIZATION_PATH: "/oauth/consent",
  AUTH_OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION: "true"
}

const adminClient = (url: string) => authClient(url, { headers: { Authorization: `Bearer ${adminJwt()}`, apikey: adminJwt() } }).client

/** A confirmed user signed in through auth-js, whose client then holds the session the consent API needs. */
const signedInUser = (url: string) =>
  Effect.gen(function*() {
    const { client } = authClient(url)
    const email = uniqueEmail("oauth")
    const { data, error } = yield* call(() => client.signUp({ email, password: PASSWORD, options: { data: { name: "Ada Lovelace" } } }))
    expect(error).toBeNull()
    return { client, email, user: data.user!, session: data.session! }
  })

/** A GET whose redirect is not followed: what a browser is told. */
const navigate = (target: string) =>
  call(async () => {
    const response = await fetch(target, { redirect: "manual" })
    return { status: response.status, location: response.headers.get("location"), json: response.status === 302 ? undefined : await response.json() }
  })

const s256 = (verifier: string) => createHash("sha256").update(verifier).digest("base64url")

interface AuthorizeOptions {
  readonly scope?: string
  readonly verifier?: string
  readonly state?: string
  readonly nonce?: string
  readonly redirectUri?: string
}

/** GET /oauth/authorize with PKCE S256, and the authorization_id the consent page is sent. */
const authorize = (url: string, clientId: string, options: AuthorizeOptions = {}) =>
  Effect.gen(function*() {
    const verifier = options.verifier ?? randomBytes(32).toString("base64url")
    const query = new URLSearchParams({
      client_id: clientId,
      redirect_uri: options.redirectUri ?? CALLBACK,
      response_type: "code",
      scope: options.scope ?? "openid email profile",
      state: options.state ?? "st-1",
      code_challenge: s256(verifier),
      code_challenge_method: "S256",
      ...(options.nonce === undefined ? {} : { nonce: options.nonce })
    })
    const answer = yield* navigate(`${url}/oauth/authorize?${query}`)
    expect(answer.status).toBe(302)
    const location = new URL(answer.location!)
    expect(`${location.origin}${location.pathname}`).toBe(`${SITE}/oauth/consent`)
    return { authorizationId: location.searchParams.get("authorization_id")!, verifier }
  })

/** A user consents through auth-js; the code from the redirect_url. */
const approve = (client: ReturnType<typeof authClient>["client"], authorizationId: string) =>
  Effect.gen(function*() {
    const details = yield* call(() => client.oauth.getAuthorizationDetails(authorizationId))
    expect(details.error).toBeNull()
    const approved = yield* call(() => client.oauth.approveAuthorization(authorizationId, { skipBrowserRedirect: true }))
    expect(approved.error).toBeNull()
    return new URL(approved.data!.redirect_url)
  })

const createClient = (url: string, params: Record<string, unknown>) =>
  Effect.gen(function*() {
    const { data, error } = yield* call(() => adminClient(url).admin.oauth.createClient({ redirect_uris: [CALLBACK], ...params } as never))
    expect(error).toBeNull()
    return data!
  })

const tokenRequest = (url: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
  raw(url, "/oauth/token", { body: new URLSearchParams(form).toString(), headers: { "content-type": "application/x-www-form-urlencoded", ...headers } })

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`

/** openid-client pointed at the issuer the server names (http://localhost:9999), its requests sent to the test server. */
const discover = (url: string, clientId: string, auth: oidc.ClientAuth) =>
  call(() =>
    oidc.discovery(new URL(ISSUER), clientId, undefined, auth, {
      execute: [oidc.allowInsecureRequests],
      [oidc.customFetch]: (target, options) => fetch(target.replace(ISSUER, url), options as RequestInit)
    }))

/** The whole flow as a third-party app runs it with openid-client, the user consenting through auth-js. */
const openidClientFlow = (url: string, clientId: string, auth: oidc.ClientAuth, signedWith = { alg: "RS256", kid: KID }) =>
  Effect.gen(function*() {
    const config = yield* discover(url, clientId, auth)
    oidc.enableNonRepudiationChecks(config)
    const { client, email, user } = yield* signedInUser(url)
    const verifier = oidc.randomPKCECodeVerifier()
    const state = oidc.randomState()
    const nonce = oidc.randomNonce()
    const authorizationUrl = oidc.buildAuthorizationUrl(config, {
      redirect_uri: CALLBACK,
      scope: "openid email profile",
      code_challenge: yield* call(() => oidc.calculatePKCECodeChallenge(verifier)),
      code_challenge_method: "S256",
      state,
      nonce
    })
    expect(authorizationUrl.href.startsWith(`${ISSUER}/oauth/authorize?`)).toBe(true)
    const toConsent = yield* navigate(authorizationUrl.href.replace(ISSUER, url))
    const authorizationId = new URL(toConsent.location!).searchParams.get("authorization_id")!
    const callback = yield* approve(client, authorizationId)
    const tokens = yield* call(() =>
      oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true }))
    const claims = tokens.claims()!
    expect(claims).toMatchObject({ iss: ISSUER, sub: user.id, aud: clientId, nonce, email, email_verified: true, name: "Ada Lovelace", client_id: clientId })
    // The same token checked again, independently, against the published keys.
    const jwks = createRemoteJWKSet(new URL(`${url}/.well-known/jwks.json`))
    const verified = yield* call(() => jwtVerify(tokens.id_token!, jwks, { issuer: ISSUER, audience: clientId }))
    expect(verified.protectedHeader).toMatchObject(signedWith)

    const access = decodeJwt(tokens.access_token).payload
    expect(access).toMatchObject({ sub: user.id, client_id: clientId, scope: "openid email profile", aal: "aal1" })
    expect(access["amr"]).toEqual([expect.objectContaining({ method: "oauth_provider/authorization_code" })])

    const info = yield* call(() => oidc.fetchUserInfo(config, tokens.access_token, user.id))
    expect(info).toMatchObject({ sub: user.id, email, email_verified: true, name: "Ada Lovelace", user_metadata: { name: "Ada Lovelace" } })

    const refreshed = yield* call(() => oidc.refreshTokenGrant(config, tokens.refresh_token!))
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
    expect(decodeJwt(refreshed.access_token).payload).toMatchObject({ client_id: clientId, scope: "openid email profile" })
    return { tokens, refreshed, user, client }
  })

describe("OAuth 2.1 server", () => {
  acceptance(env)((it) => {
    it.effect("auth-js admin.oauth: create, get, list with pages, update, regenerate the secret, delete; bad redirect_uris refused", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const admin = adminClient(url).admin.oauth
        const confidential = yield* createClient(url, { client_name: "Acme", client_uri: "https://acme.example.com" })
        expect(confidential).toMatchObject({
          client_type: "confidential",
          token_endpoint_auth_method: "client_secret_basic",
          grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"],
          redirect_uris: [CALLBACK],
          client_name: "Acme",
          registration_type: "manual"
        })
        expect(confidential.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
        const publicClient = yield* createClient(url, { token_endpoint_auth_method: "none" })
        expect(publicClient.client_type).toBe("public")
        expect(publicClient).not.toHaveProperty("client_secret")

        const got = yield* call(() => admin.getClient(confidential.client_id))
        expect(got.error).toBeNull()
        expect(got.data).not.toHaveProperty("client_secret")
        expect(got.data).toMatchObject({ client_id: confidential.client_id, client_name: "Acme" })

        const firstPage = yield* call(() => admin.listClients({ page: 1, perPage: 1 }))
        expect(firstPage.error).toBeNull()
        expect(firstPage.data.clients).toHaveLength(1)
        expect(firstPage.data.clients[0]!.client_id).toBe(publicClient.client_id)
        expect((firstPage.data as { total: number }).total).toBeGreaterThanOrEqual(2)
        const secondPage = yield* call(() => admin.listClients({ page: 2, perPage: 1 }))
        expect(secondPage.data.clients[0]!.client_id).toBe(confidential.client_id)
        const all = yield* call(() => admin.listClients())
        expect(all.data.clients.map((c) => c.client_id)).toEqual(expect.arrayContaining([confidential.client_id, publicClient.client_id]))

        const updated = yield* call(() => admin.updateClient(confidential.client_id, { client_name: "Acme 2", redirect_uris: [CALLBACK, "http://localhost:3000/cb"] }))
        expect(updated.error).toBeNull()
        expect(updated.data).toMatchObject({ client_name: "Acme 2", redirect_uris: [CALLBACK, "http://localhost:3000/cb"] })
        const cleared = yield* call(() => admin.updateClient(confidential.client_id, { client_uri: "" }))
        expect(cleared.data).toMatchObject({ client_name: "Acme 2" })
        expect(cleared.data).not.toHaveProperty("client_uri")

        const regenerated = yield* call(() => admin.regenerateClientSecret(confidential.client_id))
        expect(regenerated.error).toBeNull()
        expect(regenerated.data!.client_secret).not.toBe(confidential.client_secret)
        // The old secret is dead at once; the new one authenticates (the request then fails for having no grant).
        const old = yield* tokenRequest(url, { grant_type: "refresh_token", refresh_token: "x" }, { authorization: basic(confidential.client_id, confidential.client_secret!) })
        expect(old.json).toEqual(legacyError(400, "invalid_credentials", "invalid client credentials"))
        const fresh = yield* tokenRequest(url, { grant_type: "refresh_token", refresh_token: "x" }, { authorization: basic(confidential.client_id, regenerated.data!.client_secret!) })
        expect(fresh.json).toEqual(legacyError(400, "validation_failed", "Refresh token is not valid"))
        const publicRegenerate = yield* call(() => admin.regenerateClientSecret(publicClient.client_id))
        expect(publicRegenerate.error).toMatchObject({ status: 400, code: "validation_failed", message: "Cannot regenerate secret for public client" })

        const deleted = yield* call(() => admin.deleteClient(confidential.client_id))
        expect(deleted.error).toBeNull()
        const gone = yield* call(() => admin.getClient(confidential.client_id))
        expect(gone.error).toMatchObject({ status: 404, code: "oauth_client_not_found", message: "OAuth client not found" })

        const refused = yield* call(() => admin.createClient({ redirect_uris: ["http://evil.example.com/cb"] } as never))
        expect(refused.error).toMatchObject({
          status: 400,
          code: "validation_failed",
          message: "400: invalid redirect_uri 'http://evil.example.com/cb': HTTP scheme only allowed for localhost"
        })
        const noUris = yield* raw(url, "/admin/oauth/clients", { body: { client_name: "x" }, bearer: adminJwt(), apiVersion: true })
        expect(noUris.json).toEqual(versionedError("validation_failed", "400: redirect_uris is required"))
        const badJson = yield* raw(url, "/admin/oauth/clients", { body: { redirect_uris: "https://a.example.com" }, bearer: adminJwt(), apiVersion: true })
        expect(badJson.json).toEqual(versionedError("bad_json", "Invalid JSON body"))
        const notUuid = yield* raw(url, "/admin/oauth/clients/nope", { bearer: adminJwt(), apiVersion: true })
        expect(notUuid.json).toEqual(versionedError("validation_failed", "invalid client_id format"))
        const methodForType = yield* raw(url, `/admin/oauth/clients/${publicClient.client_id}`, {
          method: "PUT", body: { token_endpoint_auth_method: "client_secret_post" }, bearer: adminJwt(), apiVersion: true
        })
        expect(methodForType.json).toEqual(versionedError("validation_failed",
          "token_endpoint_auth_method 'client_secret_post' is not valid for client_type 'public'; valid methods: [none]"))
        const { session } = yield* signedInUser(url)
        const notAdmin = yield* raw(url, "/admin/oauth/clients", { bearer: session.access_token, apiVersion: true })
        expect(notAdmin.status).toBe(403)
      }))

    it.effect("dynamic registration makes a dynamic client", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const registered = yield* raw(url, "/oauth/clients/register", { body: { redirect_uris: ["myapp://callback"], client_name: "CLI", token_endpoint_auth_method: "none" } })
        expect(registered.status).toBe(201)
        expect(registered.json).toMatchObject({ registration_type: "dynamic", client_type: "public", redirect_uris: ["myapp://callback"] })
      }))

    it.effect("discovery: both documents, the same body, every endpoint under the issuer", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const openid = yield* raw(url, "/.well-known/openid-configuration")
        const rfc8414 = yield* raw(url, "/auth/v1/.well-known/oauth-authorization-server")
        expect(openid.status).toBe(200)
        expect(openid.headers.get("cache-control")).toBe("public, max-age=600")
        expect(rfc8414.json).toEqual(openid.json)
        expect(openid.json).toMatchObject({
          issuer: ISSUER,
          authorization_endpoint: `${ISSUER}/oauth/authorize`,
          token_endpoint: `${ISSUER}/oauth/token`,
          userinfo_endpoint: `${ISSUER}/oauth/userinfo`,
          jwks_uri: `${ISSUER}/.well-known/jwks.json`,
          registration_endpoint: `${ISSUER}/oauth/clients/register`,
          code_challenge_methods_supported: ["S256", "plain"],
          token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"]
        })
      }))

    it.effect("openid-client with client_secret_basic (ids and secrets form-url-encoded, as RFC 6749 says)", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const client = yield* createClient(url, {})
        yield* openidClientFlow(url, client.client_id, oidc.ClientSecretBasic(client.client_secret!))
      }))

    it.effect("openid-client with client_secret_post", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const client = yield* createClient(url, { token_endpoint_auth_method: "client_secret_post" })
        yield* openidClientFlow(url, client.client_id, oidc.ClientSecretPost(client.client_secret!))
      }))

    it.effect("openid-client as a public client (none); the session is refused at /token and revoking the grant ends it", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const client = yield* createClient(url, { token_endpoint_auth_method: "none", client_name: "Public app" })
        const { refreshed } = yield* openidClientFlow(url, client.client_id, oidc.None())
        const viaToken = yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: refreshed.refresh_token } })
        expect(viaToken.json).toEqual({ error: "invalid_client", error_description: "Client authentication required for OAuth session" })
        // A refresh token of an ordinary session is refused at /oauth/token.
        const { session } = yield* signedInUser(url)
        const ordinary = yield* tokenRequest(url, { grant_type: "refresh_token", refresh_token: session.refresh_token, client_id: client.client_id })
        expect(ordinary.json).toEqual({ error: "invalid_client", error_description: "Client authentication not allowed for non-OAuth session" })
        // Both refusals spent nothing: each token still refreshes where it belongs.
        expect((yield* tokenRequest(url, { grant_type: "refresh_token", refresh_token: refreshed.refresh_token!, client_id: client.client_id })).status).toBe(200)
        expect((yield* raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: session.refresh_token } })).status).toBe(200)
      }))

    it.effect("consent through auth-js: details, deny, auto-approval of a covered scope, grants listed and revoked", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const app = yield* createClient(url, { client_name: "Grant app", token_endpoint_auth_method: "none" })
        const { client, email, user } = yield* signedInUser(url)

        const first = yield* authorize(url, app.client_id, { scope: "email", state: "a b~*" })
        const details = yield* call(() => client.oauth.getAuthorizationDetails(first.authorizationId))
        expect(details.data).toEqual({
          authorization_id: first.authorizationId,
          redirect_uri: CALLBACK,
          client: { id: app.client_id, name: "Grant app" },
          user: { id: user.id, email },
          scope: "email"
        })
        const denied = yield* call(() => client.oauth.denyAuthorization(first.authorizationId, { skipBrowserRedirect: true }))
        // Go's url.Values encoding: keys sorted, a space is +, ~ kept, * escaped.
        expect(denied.data!.redirect_url).toBe(`${CALLBACK}?error=access_denied&error_description=User+denied+the+request&state=a+b~%2A`)
        const again = yield* call(() => client.oauth.denyAuthorization(first.authorizationId, { skipBrowserRedirect: true }))
        expect(again.error).toMatchObject({ status: 400, code: "validation_failed", message: "authorization request is no longer pending" })

        const second = yield* authorize(url, app.client_id, { scope: "email profile" })
        const code = (yield* approve(client, second.authorizationId)).searchParams.get("code")!
        expect(code).toMatch(/^[0-9a-f-]{36}$/)
        // A narrower request is approved at once: the details are only the redirect.
        const third = yield* authorize(url, app.client_id, { scope: "email" })
        const auto = yield* call(() => client.oauth.getAuthorizationDetails(third.authorizationId))
        expect(Object.keys(auto.data!)).toEqual(["redirect_url"])
        // A wider one asks again.
        const fourth = yield* authorize(url, app.client_id, { scope: "email phone" })
        const asked = yield* call(() => client.oauth.getAuthorizationDetails(fourth.authorizationId))
        expect(asked.data).toHaveProperty("authorization_id")
        // Someone else cannot see it, and a foreign Origin is refused.
        const other = yield* signedInUser(url)
        const foreign = yield* call(() => other.client.oauth.getAuthorizationDetails(fourth.authorizationId))
        expect(foreign.error).toMatchObject({ status: 404, code: "oauth_authorization_not_found" })
        const origin = yield* raw(url, `/oauth/authorizations/${fourth.authorizationId}`, {
          bearer: (yield* call(() => client.getSession())).data.session!.access_token, headers: { origin: "https://evil.example.com" }, apiVersion: true
        })
        expect(origin.json).toEqual(versionedError("validation_failed", "unauthorized request origin"))
        const siteOrigin = yield* raw(url, `/oauth/authorizations/${fourth.authorizationId}`, {
          bearer: (yield* call(() => client.getSession())).data.session!.access_token, headers: { origin: SITE }, apiVersion: true
        })
        expect(siteOrigin.status).toBe(200)

        // The code works once; revoking the grant ends the session it made.
        const exchanged = yield* tokenRequest(url, { grant_type: "authorization_code", code, code_verifier: second.verifier, client_id: app.client_id, redirect_uri: CALLBACK })
        expect(exchanged.status).toBe(200)
        expect(exchanged.headers.get("cache-control")).toBe("no-store")
        expect(Object.keys(exchanged.json).sort()).toEqual(["access_token", "expires_in", "refresh_token", "token_type"])
        const grants = yield* call(() => client.oauth.listGrants())
        expect(grants.data).toEqual([{ client: { id: app.client_id, name: "Grant app" }, scopes: ["email", "profile"], granted_at: expect.any(String) }])
        const revoked = yield* call(() => client.oauth.revokeGrant({ clientId: app.client_id }))
        expect(revoked.error).toBeNull()
        expect((yield* call(() => client.oauth.listGrants())).data).toEqual([])
        const afterRevoke = yield* tokenRequest(url, { grant_type: "refresh_token", refresh_token: exchanged.json.refresh_token, client_id: app.client_id })
        expect(afterRevoke.json).toMatchObject({ code: 400, error_code: "refresh_token_not_found" })
        const revokeAgain = yield* call(() => client.oauth.revokeGrant({ clientId: app.client_id }))
        expect(revokeAgain.error).toMatchObject({ status: 404, code: "oauth_consent_not_found" })
      }))

    it.effect("an expired request is 404 and marked expired; the sweep marks and then deletes them", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const app = yield* createClient(url, { token_endpoint_auth_method: "none" })
        const { client } = yield* signedInUser(url)
        const { authorizationId } = yield* authorize(url, app.client_id)
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE auth.oauth_authorizations SET created_at = now() - interval '1 hour', expires_at = now() - interval '1 minute'
          WHERE authorization_id = ${authorizationId}`
        const expired = yield* call(() => client.oauth.getAuthorizationDetails(authorizationId))
        expect(expired.error).toMatchObject({ status: 404, code: "oauth_authorization_not_found", message: "authorization not found" })
        const [row] = yield* sql<{ status: string }>`SELECT status::text AS status FROM auth.oauth_authorizations WHERE authorization_id = ${authorizationId}`
        expect(row!.status).toBe("expired")

        // The sweep marks pending requests past their expiry, and deletes those that ended a day ago.
        const pending = yield* authorize(url, app.client_id)
        const live = yield* authorize(url, app.client_id)
        yield* sql`UPDATE auth.oauth_authorizations SET created_at = now() - interval '1 hour', expires_at = now() - interval '1 minute'
          WHERE authorization_id = ${pending.authorizationId}`
        yield* sql`UPDATE auth.oauth_authorizations SET created_at = now() - interval '3 days', expires_at = now() - interval '2 days'
          WHERE authorization_id = ${authorizationId}`
        const swept = yield* Effect.flatMap(ExpiredOAuthAuthorizations, (sweeper) => sweeper.sweep()).pipe(
          Effect.provide(ExpiredOAuthAuthorizations.Default)
        )
        expect(swept).toBeGreaterThanOrEqual(2)
        const left = yield* sql<{ authorization_id: string; status: string }>`SELECT authorization_id, status::text AS status
          FROM auth.oauth_authorizations WHERE authorization_id IN (${authorizationId}, ${pending.authorizationId}, ${live.authorizationId})
          ORDER BY status`
        expect(left).toEqual(expect.arrayContaining([
          { authorization_id: pending.authorizationId, status: "expired" },
          { authorization_id: live.authorizationId, status: "pending" }
        ]))
        expect(left).toHaveLength(2)
      }))

    it.effect("/oauth/authorize: JSON errors before the client is trusted, redirected ones after", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const app = yield* createClient(url, { token_endpoint_auth_method: "none" })
        const get = (query: Record<string, string>) => navigate(`${url}/oauth/authorize?${new URLSearchParams(query)}`)
        expect((yield* get({})).json).toEqual(legacyError(400, "validation_failed", "client_id is required"))
        expect((yield* get({ client_id: "x" })).json).toEqual(legacyError(400, "validation_failed", "redirect_uri is required"))
        expect((yield* get({ client_id: "x", redirect_uri: CALLBACK })).json).toEqual(legacyError(400, "oauth_client_not_found", "invalid client_id format"))
        expect((yield* get({ client_id: "00000000-0000-4000-8000-000000000000", redirect_uri: CALLBACK })).json)
          .toEqual(legacyError(400, "oauth_client_not_found", "invalid client_id"))
        expect((yield* get({ client_id: app.client_id, redirect_uri: `${CALLBACK}/` })).json).toEqual(legacyError(400, "validation_failed", "invalid redirect_uri"))
        const noPkce = yield* get({ client_id: app.client_id, redirect_uri: CALLBACK, state: "s" })
        expect(noPkce.location).toBe(`${CALLBACK}?error=invalid_request&error_description=PKCE+flow+requires+both+code_challenge+and+code_challenge_method&state=s`)
        const badScope = yield* get({ client_id: app.client_id, redirect_uri: CALLBACK, scope: "openid admin", code_challenge: s256("v"), code_challenge_method: "S256" })
        expect(badScope.location).toBe(`${CALLBACK}?error=invalid_request&error_description=unsupported+scope%3A+admin`)
        const implicit = yield* get({ client_id: app.client_id, redirect_uri: CALLBACK, response_type: "token" })
        expect(implicit.location).toBe(`${CALLBACK}?error=invalid_request&error_description=only+response_type%3Dcode+is+supported`)
        // Past GoTrue's column limits: its insert fails and it redirects with server_error; so does Gatehouse, before.
        const pkce = { code_challenge: s256("v"), code_challenge_method: "S256" }
        const longNonce = yield* get({ client_id: app.client_id, redirect_uri: CALLBACK, nonce: "n".repeat(256), ...pkce })
        expect(longNonce.location).toBe(`${CALLBACK}?error=server_error&error_description=error+creating+authorization`)
        // A scope named a thousand times is one scope to consent to.
        const { client } = yield* signedInUser(url)
        const repeated = yield* authorize(url, app.client_id, { scope: Array.from({ length: 600 }, () => "email").join(" ") })
        yield* approve(client, repeated.authorizationId)
        // Text PostgreSQL cannot store is refused with the body, never a 500.
        const nul = yield* raw(url, "/admin/oauth/clients", { body: { redirect_uris: [CALLBACK], client_name: "a\u0000b" }, bearer: adminJwt() })
        expect(nul.json).toEqual(legacyError(400, "bad_json", "Invalid JSON body"))
      }))

    it.effect("/oauth/token refusals: client authentication, replay, wrong verifier, wrong client, concurrent exchanges", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const app = yield* createClient(url, {})
        const otherApp = yield* createClient(url, {})
        const { client } = yield* signedInUser(url)
        const secret = app.client_secret!
        const auth = { authorization: basic(app.client_id, secret) }

        expect((yield* tokenRequest(url, { grant_type: "authorization_code" }, { authorization: "Basic %%%" })).json)
          .toEqual(legacyError(400, "invalid_credentials", "Invalid client credentials: invalid basic auth encoding"))
        expect((yield* tokenRequest(url, { grant_type: "authorization_code" }, { authorization: `Basic ${Buffer.from("nocolon").toString("base64")}` })).json)
          .toEqual(legacyError(400, "invalid_credentials", "Invalid client credentials: invalid basic auth format"))
        expect((yield* tokenRequest(url, { grant_type: "authorization_code" })).json)
          .toEqual(legacyError(400, "invalid_credentials", "Invalid client credentials: client_id is required"))
        expect((yield* tokenRequest(url, { grant_type: "authorization_code", client_id: app.client_id, client_secret: secret })).json)
          .toEqual(legacyError(400, "invalid_credentials", "invalid authentication method: client is registered for 'client_secret_basic' but 'client_secret_post' was used"))
        expect((yield* tokenRequest(url, { grant_type: "authorization_code" }, { authorization: basic(app.client_id, "wrong") })).json)
          .toEqual(legacyError(400, "invalid_credentials", "invalid client credentials"))
        expect((yield* tokenRequest(url, {}, auth)).json).toEqual({ error: "invalid_request", error_description: "grant_type is required" })
        expect((yield* tokenRequest(url, { grant_type: "password" }, auth)).json)
          .toEqual({ error: "unsupported_grant_type", error_description: "Client is not allowed to use grant type: password" })
        expect((yield* tokenRequest(url, { grant_type: "authorization_code" }, auth)).json)
          .toEqual({ error: "invalid_request", error_description: "code is required for authorization_code grant" })

        const { authorizationId, verifier } = yield* authorize(url, app.client_id)
        const code = (yield* approve(client, authorizationId)).searchParams.get("code")!
        expect((yield* tokenRequest(url, { grant_type: "authorization_code", code, code_verifier: verifier }, { authorization: basic(otherApp.client_id, otherApp.client_secret!) })).json)
          .toEqual({ error: "invalid_grant", error_description: "Authorization code was not issued for this client" })
        expect((yield* tokenRequest(url, { grant_type: "authorization_code", code, code_verifier: "x".repeat(43) }, auth)).json)
          .toEqual({ error: "invalid_grant", error_description: "PKCE verification failed: code challenge does not match previously saved code verifier" })
        expect((yield* tokenRequest(url, { grant_type: "authorization_code", code }, auth)).json)
          .toEqual({ error: "invalid_grant", error_description: "PKCE verification failed: code_verifier is required when PKCE challenge is present" })
        expect((yield* tokenRequest(url, { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: "https://other.example.com" }, auth)).json)
          .toEqual({ error: "invalid_grant", error_description: "Invalid redirect_uri" })

        // Ten exchanges of one code at once: exactly one gets tokens.
        const racing = yield* Effect.all(
          Array.from({ length: 10 }, () => tokenRequest(url, { grant_type: "authorization_code", code, code_verifier: verifier }, auth)),
          { concurrency: "unbounded" }
        )
        expect(racing.filter((r) => r.status === 200)).toHaveLength(1)
        for (const refused of racing.filter((r) => r.status !== 200)) {
          expect(refused.json).toEqual({ error: "invalid_grant", error_description: "Invalid authorization code" })
        }
        const winner = racing.find((r) => r.status === 200)!
        expect(winner.json).toHaveProperty("id_token")
        // Replayed afterwards: the code is gone.
        expect((yield* tokenRequest(url, { grant_type: "authorization_code", code, code_verifier: verifier }, auth)).json)
          .toEqual({ error: "invalid_grant", error_description: "Invalid authorization code" })
        // The session's refresh token belongs to this client only.
        expect((yield* tokenRequest(url, { grant_type: "refresh_token", refresh_token: winner.json.refresh_token }, { authorization: basic(otherApp.client_id, otherApp.client_secret!) })).json)
          .toEqual({ error: "invalid_client", error_description: "Client does not match the session's OAuth client" })
        // The other client's attempt spent nothing: the rightful client refreshes, and its tokens carry its client.
        const own = yield* tokenRequest(url, { grant_type: "refresh_token", refresh_token: winner.json.refresh_token }, auth)
        expect(own.status).toBe(200)
        expect(decodeJwt(own.json.access_token).payload).toMatchObject({ client_id: app.client_id })
      }))
  })
})

const badJwt = legacyError(403, "bad_jwt", "invalid JWT: unable to parse or verify signature, token is invalid")

/** Each way a bearer token is used on the user's behalf, with `token`. */
const bearerUses = (url: string, token: string, writes: string) =>
  Effect.all({
    getUser: raw(url, "/user", { bearer: token }),
    putUser: raw(url, "/user", { method: "PUT", body: { data: { written_by: writes } }, bearer: token }),
    userinfo: raw(url, "/oauth/userinfo", { bearer: token }),
    grants: raw(url, "/user/oauth/grants", { bearer: token })
  })

describe("OAuth 2.1 server: review fixes", () => {
  acceptance(env)((it) => {
    it.effect("an ID token authenticates nothing, before and after the grant is revoked; the access token beside it does", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const app = yield* createClient(url, {})
        const { client, tokens } = yield* openidClientFlow(url, app.client_id, oidc.ClientSecretBasic(app.client_secret!))
        const idToken = tokens.id_token!
        for (const answer of Object.values(yield* bearerUses(url, idToken, "id token"))) expect(answer.json).toEqual(badJwt)
        for (const answer of Object.values(yield* bearerUses(url, tokens.access_token, "access token"))) expect(answer.status).toBe(200)
        const revoked = yield* call(() => client.oauth.revokeGrant({ clientId: app.client_id }))
        expect(revoked.error).toBeNull()
        for (const answer of Object.values(yield* bearerUses(url, idToken, "id token"))) expect(answer.json).toEqual(badJwt)
        // Tokens without a client keep working: the user's own session, and an admin token with no session.
        const { data, error } = yield* call(() => client.getUser())
        expect(error).toBeNull()
        expect(data.user!.user_metadata).toMatchObject({ written_by: "access token" })
        expect((yield* raw(url, "/admin/oauth/clients", { bearer: adminJwt() })).status).toBe(200)
      }))

    it.effect("a code that is not a UUID is invalid_grant before any lookup; NUL and 10,000 characters anywhere are refused, never a 500", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const app = yield* createClient(url, { token_endpoint_auth_method: "none" })
        const invalidCode = { error: "invalid_grant", error_description: "Invalid authorization code" }
        const formNul = yield* raw(url, "/oauth/token", {
          body: `grant_type=authorization_code&client_id=${app.client_id}&code=a%00b&code_verifier=${"v".repeat(43)}`,
          headers: { "content-type": "application/x-www-form-urlencoded" }
        })
        expect(formNul.json).toEqual(invalidCode)
        const jsonNul = yield* raw(url, "/oauth/token", { body: { grant_type: "authorization_code", client_id: app.client_id, code: "a\u0000b" } })
        expect(jsonNul.json).toEqual(invalidCode)
        expect((yield* tokenRequest(url, { grant_type: "authorization_code", client_id: app.client_id, code: "c".repeat(10_000) })).json).toEqual(invalidCode)

        const { client, session } = yield* signedInUser(url)
        const { authorizationId, verifier } = yield* authorize(url, app.client_id)
        const code = (yield* approve(client, authorizationId)).searchParams.get("code")!
        const pkce = { code_challenge: s256("v".repeat(43)), code_challenge_method: "S256" }
        const consentBody = { action: "approve" }
        for (const bad of ["a\u0000b", "x".repeat(10_000)]) {
          const enc = encodeURIComponent(bad)
          const answers = yield* Effect.all([
            tokenRequest(url, { grant_type: "authorization_code", client_id: bad, code }),
            tokenRequest(url, { grant_type: "authorization_code", client_id: app.client_id, code, code_verifier: verifier, redirect_uri: bad }),
            tokenRequest(url, { grant_type: "authorization_code", client_id: app.client_id, code, code_verifier: bad }),
            tokenRequest(url, { grant_type: "refresh_token", client_id: app.client_id, refresh_token: bad }),
            raw(url, "/oauth/token", { body: { grant_type: "authorization_code", client_id: app.client_id, code, code_verifier: verifier, resource: bad } }),
            raw(url, `/oauth/authorizations/${enc}`, { bearer: session.access_token }),
            raw(url, `/oauth/authorizations/${enc}/consent`, { body: consentBody, bearer: session.access_token }),
            raw(url, `/oauth/authorizations/${authorizationId}/consent`, { body: { action: bad }, bearer: session.access_token }),
            raw(url, `/user/oauth/grants?client_id=${enc}`, { method: "DELETE", bearer: session.access_token }),
            raw(url, `/admin/oauth/clients/${enc}`, { bearer: adminJwt() }),
            raw(url, `/admin/oauth/clients/${app.client_id}`, { method: "PUT", body: { client_name: bad }, bearer: adminJwt() }),
            raw(url, `/admin/oauth/clients/${app.client_id}`, { method: "PUT", body: { logo_uri: bad }, bearer: adminJwt() }),
            raw(url, "/admin/oauth/clients", { body: { redirect_uris: [CALLBACK], client_uri: bad }, bearer: adminJwt() }),
            raw(url, "/admin/oauth/clients", { body: { redirect_uris: [bad] }, bearer: adminJwt() }),
            raw(url, "/oauth/clients/register", { body: { redirect_uris: [CALLBACK], client_name: bad } }),
            navigate(`${url}/oauth/authorize?${new URLSearchParams({ client_id: bad, redirect_uri: CALLBACK })}`),
            navigate(`${url}/oauth/authorize?${new URLSearchParams({ client_id: app.client_id, redirect_uri: bad })}`)
          ])
          for (const answer of answers) {
            expect(answer.status).toBeGreaterThanOrEqual(400)
            expect(answer.status).toBeLessThan(500)
          }
          // Once the client is trusted, refusals go back to it: a redirect naming the error, else a 4xx, never a 500.
          for (const field of ["scope", "state", "nonce", "resource"]) {
            const query = new URLSearchParams({ client_id: app.client_id, redirect_uri: CALLBACK, ...pkce, [field]: bad })
            const answer = yield* navigate(`${url}/oauth/authorize?${query}`)
            // The contract itself refuses some (a NUL in scope is 400 validation_failed).
            expect(answer.status === 302 ? new URL(answer.location!).searchParams.get("error") : answer.status).toEqual(
              answer.status === 302 ? expect.any(String) : expect.toSatisfy((status: number) => status >= 400 && status < 500)
            )
          }
        }
        // The code survived all of it.
        const exchanged = yield* tokenRequest(url, { grant_type: "authorization_code", client_id: app.client_id, code, code_verifier: verifier })
        expect(exchanged.status).toBe(200)
      }))

    it.effect("revoking a grant kills its approved, unexchanged codes and the requests the user opened", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const app = yield* createClient(url, { token_endpoint_auth_method: "none" })
        const { client } = yield* signedInUser(url)
        const approved = yield* authorize(url, app.client_id, { scope: "email" })
        const code = (yield* approve(client, approved.authorizationId)).searchParams.get("code")!
        const opened = yield* authorize(url, app.client_id, { scope: "email phone" })
        expect((yield* call(() => client.oauth.getAuthorizationDetails(opened.authorizationId))).data).toHaveProperty("authorization_id")
        expect((yield* call(() => client.oauth.revokeGrant({ clientId: app.client_id }))).error).toBeNull()
        const exchanged = yield* tokenRequest(url, { grant_type: "authorization_code", client_id: app.client_id, code, code_verifier: approved.verifier })
        expect(exchanged.json).toEqual({ error: "invalid_grant", error_description: "Invalid authorization code" })
        const late = yield* call(() => client.oauth.approveAuthorization(opened.authorizationId, { skipBrowserRedirect: true }))
        expect(late.error).toMatchObject({ status: 404, code: "oauth_authorization_not_found" })
      }))

    it.effect("two approvals of one request at once, and two users claiming one request at once: exactly one wins, no 500", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const app = yield* createClient(url, { token_endpoint_auth_method: "none" })
        const { client } = yield* signedInUser(url)
        const request = yield* authorize(url, app.client_id, { scope: "email" })
        expect((yield* call(() => client.oauth.getAuthorizationDetails(request.authorizationId))).error).toBeNull()
        const approvals = yield* Effect.all(
          [1, 2].map(() => call(() => client.oauth.approveAuthorization(request.authorizationId, { skipBrowserRedirect: true }))),
          { concurrency: "unbounded" }
        )
        expect(approvals.filter((a) => a.error === null)).toHaveLength(1)
        for (const lost of approvals.filter((a) => a.error !== null)) expect([400, 404]).toContain(lost.error!.status)
        const code = new URL(approvals.find((a) => a.error === null)!.data!.redirect_url).searchParams.get("code")!
        expect((yield* tokenRequest(url, { grant_type: "authorization_code", client_id: app.client_id, code, code_verifier: request.verifier })).status).toBe(200)

        const users = [yield* signedInUser(url), yield* signedInUser(url)]
        const contested = yield* authorize(url, app.client_id, { scope: "email" })
        const claims = yield* Effect.all(
          users.map((u) => call(() => u.client.oauth.getAuthorizationDetails(contested.authorizationId))),
          { concurrency: "unbounded" }
        )
        expect(claims.filter((c) => c.error === null)).toHaveLength(1)
        for (const lost of claims.filter((c) => c.error !== null)) expect(lost.error).toMatchObject({ status: 404, code: "oauth_authorization_not_found" })
        const winner = users[claims.findIndex((c) => c.error === null)]!
        const loser = users[claims.findIndex((c) => c.error !== null)]!
        const refused = yield* call(() => loser.client.oauth.approveAuthorization(contested.authorizationId, { skipBrowserRedirect: true }))
        expect(refused.error).toMatchObject({ status: 404 })
        const won = yield* call(() => winner.client.oauth.approveAuthorization(contested.authorizationId, { skipBrowserRedirect: true }))
        expect(won.error).toBeNull()
      }))
  })
})

describe("OAuth 2.1 server switched off", () => {
  acceptance({ AUTH_MAILER_AUTOCONFIRM: "true" })((it) => {
    it.effect("every route is 404 feature_disabled, but OpenID discovery; the user and admin routes authenticate first", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const disabled = legacyError(404, "feature_disabled", "OAuth server is disabled")
        expect((yield* raw(url, "/oauth/authorize")).json).toEqual(disabled)
        expect((yield* raw(url, "/oauth/userinfo")).json).toEqual(disabled)
        expect((yield* raw(url, "/oauth/token", { body: "grant_type=x" })).json).toEqual(disabled)
        expect((yield* raw(url, "/.well-known/oauth-authorization-server")).json).toEqual(disabled)
        expect((yield* raw(url, "/admin/oauth/clients", { bearer: adminJwt() })).json).toEqual(disabled)
        expect((yield* raw(url, "/admin/oauth/clients")).status).toBe(401)
        expect((yield* raw(url, "/user/oauth/grants")).status).toBe(401)
        const openid = yield* raw(url, "/.well-known/openid-configuration")
        expect(openid.status).toBe(200)
        expect(openid.json).not.toHaveProperty("registration_endpoint")
      }))
  })
})

describe("OAuth 2.1 server with the HS256 secret as its only signing key", () => {
  acceptance({
    AUTH_SITE_URL: SITE,
    AUTH_MAILER_AUTOCONFIRM: "true",
    AUTH_OAUTH_SERVER_ENABLED: "true",
    AUTH_OAUTH_SERVER_AUTHORIZATION_PATH: "oauth/consent",
    AUTH_RATE_LIMIT_HEADER: "x-client-ip",
    AUTH_RATE_LIMIT_OAUTH_DYNAMIC_CLIENT_REGISTER: "1"
  })((it) => {
    it.effect("an ID token cannot be signed: 500, and the code is not spent (GoTrue spends it); without openid the code works, as JSON too", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const app = yield* createClient(url, { token_endpoint_auth_method: "none" })
        const { client, user, session } = yield* signedInUser(url)
        const withOpenid = yield* authorize(url, app.client_id, { scope: "openid email" })
        const code = (yield* approve(client, withOpenid.authorizationId)).searchParams.get("code")!
        const refused = yield* expectingErrors(tokenRequest(url, { grant_type: "authorization_code", code, code_verifier: withOpenid.verifier, client_id: app.client_id }))
        expect(refused.status).toBe(500)
        expect(refused.json).toMatchObject({ error_code: "unexpected_failure", msg: "Error generating ID token" })
        const sql = yield* SqlClient.SqlClient
        const [kept] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM auth.oauth_authorizations WHERE authorization_code = ${code}`
        expect(kept!.n).toBe(1)

        const plain = yield* authorize(url, app.client_id, { scope: "email" })
        // The consent covers email already: approved as soon as the user looks.
        const auto = yield* call(() => client.oauth.getAuthorizationDetails(plain.authorizationId))
        const plainCode = new URL((auto.data as { redirect_url: string }).redirect_url).searchParams.get("code")!
        const json = yield* raw(url, "/oauth/token", { body: { grant_type: "authorization_code", code: plainCode, code_verifier: plain.verifier, client_id: app.client_id } })
        expect(json.status).toBe(200)
        expect(json.json).not.toHaveProperty("id_token")

        // userinfo: an ordinary session's token gets sub alone; the OAuth session's, its email.
        expect((yield* raw(url, "/oauth/userinfo", { bearer: session.access_token })).json).toEqual({ sub: user.id })
        expect((yield* raw(url, "/oauth/userinfo", { bearer: json.json.access_token })).json).toEqual({ sub: user.id, email: user.email, email_verified: true })

        const dcr = yield* raw(url, "/oauth/clients/register", { body: { redirect_uris: [CALLBACK] } })
        expect(dcr.json).toEqual(legacyError(403, "oauth_dynamic_client_registration_disabled", "Dynamic client registration is not enabled"))
        const discovery = yield* raw(url, "/.well-known/openid-configuration")
        expect(discovery.json).not.toHaveProperty("registration_endpoint")

        // The registration limiter counts before the switch is read: GoTrue's burst of 30, then 429.
        const registerFrom = () => raw(url, "/oauth/clients/register", { body: { redirect_uris: [CALLBACK] }, headers: { "x-client-ip": "198.51.100.9" } })
        for (let i = 0; i < 30; i++) expect((yield* registerFrom()).status).toBe(403)
        const limited = yield* registerFrom()
        expect(limited.status).toBe(429)
        expect(limited.json).toMatchObject({ error_code: "over_request_rate_limit" })
      }))
  })
})

describe("OAuth 2.1 server behind a client header", () => {
  acceptance({ ...env, AUTH_RATE_LIMIT_HEADER: "x-client-ip" })((it) => {
    it.effect("/oauth/authorize is limited per client: a burst of 60, then 429 over_request_rate_limit; another client is not", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const from = (ip: string) => raw(url, "/oauth/authorize", { headers: { "x-client-ip": ip } })
        for (let i = 0; i < 60; i++) expect((yield* from("198.51.100.20")).status).toBe(400)
        const limited = yield* from("198.51.100.20")
        expect(limited.status).toBe(429)
        expect(limited.json).toMatchObject({ error_code: "over_request_rate_limit" })
        expect((yield* from("198.51.100.21")).status).toBe(400)
      }))
  })
})

const ed25519 = generateKeyPairSync("ed25519").privateKey
const EDDSA_KID = "gatehouse-oauth-eddsa"

describe("OAuth 2.1 server signing with EdDSA", () => {
  acceptance({
    ...env,
    AUTH_JWT_KEYS: JSON.stringify([{ ...ed25519.export({ format: "jwk" }), kid: EDDSA_KID, alg: "EdDSA", use: "sig", key_ops: ["sign"] }])
  })((it) => {
    it.effect("discovery adds EdDSA to GoTrue's list, so openid-client accepts and verifies the ID token", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const discovery = yield* raw(url, "/.well-known/openid-configuration")
        expect(discovery.json.id_token_signing_alg_values_supported).toEqual(["RS256", "HS256", "ES256", "EdDSA"])
        const client = yield* createClient(url, {})
        yield* openidClientFlow(url, client.client_id, oidc.ClientSecretBasic(client.client_secret!), { alg: "EdDSA", kid: EDDSA_KID })
      }))
  })
})
