/**
 * The OAuth 2.1 server side by side with the real GoTrue v2.196, both serving one database GoTrue migrated (Gatehouse's
 * migration 0020 then runs over GoTrue's own OAuth tables): the same refusals get the same answers, status and body;
 * a client either server registered authenticates at the other, and a code the other approved is exchanged; and where
 * Gatehouse is stronger (RFC 6749 §2.3.1 Basic credentials, which openid-client sends), GoTrue fails and Gatehouse
 * does not.
 *
 * PostgreSQL and the GoTrue binary only; skipped without them.
 */
import { createHash, generateKeyPairSync, randomBytes, sign } from "node:crypto"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Logger, LogLevel, Option, Redacted } from "effect"
import * as oidc from "openid-client"
import { PostgresDatabase } from "../../../src/platform/sql/Database.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { realGoTrueMissing, startGoTrue } from "../../support/RealGoTrue.js"
import { externalDatabaseUrl, freshDatabaseUrl } from "../../support/TestDatabase.js"
import { baseTestEnv, ServerUrl, TestServerOver, testConfig } from "../../support/TestServer.js"
import { authClient, call, nowSeconds, PASSWORD, raw, type RawRequest, uniqueEmail } from "./AcceptanceKit.js"

const SITE = "https://app.example.com"
const ISSUER = "http://localhost:9999"
const CALLBACK = "https://client.example.com/callback"
const SECRET = baseTestEnv["AUTH_JWT_SECRET"]!
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
const KEYS = JSON.stringify([{ ...privateKey.export({ format: "jwk" }), kid: "side-by-side", alg: "RS256", use: "sig", key_ops: ["sign", "verify"] }])

class GoTrueUrl extends Context.Tag("test/GoTrueUrl")<GoTrueUrl, string>() {}

const BesideRealGoTrue = Layer.unwrapScoped(
  Effect.gen(function*() {
    const { url } = yield* freshDatabaseUrl(Option.getOrElse(externalDatabaseUrl, () => ""))
    const gotrue = yield* startGoTrue(url, {
      GOTRUE_JWT_SECRET: SECRET,
      GOTRUE_JWT_KEYS: KEYS,
      GOTRUE_JWT_ISSUER: ISSUER,
      GOTRUE_JWT_EXP: "3600",
      GOTRUE_JWT_AUD: "authenticated",
      GOTRUE_JWT_DEFAULT_GROUP_NAME: "authenticated",
      GOTRUE_JWT_ADMIN_ROLES: "service_role,supabase_admin",
      GOTRUE_SITE_URL: SITE,
      GOTRUE_MAILER_AUTOCONFIRM: "true",
      GOTRUE_OAUTH_SERVER_ENABLED: "true",
      GOTRUE_OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION: "true",
      GOTRUE_OAUTH_SERVER_AUTHORIZATION_PATH: "/oauth/consent",
      GOTRUE_RATE_LIMIT_OAUTH_DYNAMIC_CLIENT_REGISTER: "100000"
    })
    const env = {
      AUTH_SITE_URL: SITE,
      AUTH_MAILER_AUTOCONFIRM: "true",
      AUTH_JWT_KEYS: KEYS,
      AUTH_OAUTH_SERVER_ENABLED: "true",
      AUTH_OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION: "true",
      AUTH_OAUTH_SERVER_AUTHORIZATION_PATH: "/oauth/consent"
    }
    const Migrated = Layer.effectDiscard(Effect.orDie(migrate({ namespace: testConfig(env).db.namespace })))
    return TestServerOver(env).pipe(
      Layer.provideMerge(Migrated),
      Layer.provideMerge(PostgresDatabase({ url: Redacted.make(url), maxPoolSize: 10 })),
      Layer.provideMerge(Layer.succeed(GoTrueUrl, gotrue.url))
    )
  })
).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Error)), Layer.orDie)

/** One request to both servers: their status and body. */
const both = (path: string, options: RawRequest = {}) =>
  Effect.gen(function*() {
    const gatehouse = yield* raw(yield* ServerUrl, path, options)
    const gotrue = yield* raw(yield* GoTrueUrl, path, options)
    return { gatehouse: { status: gatehouse.status, body: gatehouse.json }, gotrue: { status: gotrue.status, body: gotrue.json } }
  })

const navigate = (target: string) =>
  call(async () => {
    const response = await fetch(target, { redirect: "manual" })
    return { status: response.status, location: response.headers.get("location") ?? "", text: await response.text() }
  })

const s256 = (verifier: string) => createHash("sha256").update(verifier).digest("base64url")
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`
const form = (fields: Record<string, string>, headers: Record<string, string> = {}): RawRequest => ({
  body: new URLSearchParams(fields).toString(),
  headers: { "content-type": "application/x-www-form-urlencoded", ...headers }
})
const segment = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")
/** A service_role token signed with the shared RS256 key: GoTrue with JWT_KEYS accepts no HS256 token. */
const adminToken = (() => {
  const input = `${segment({ alg: "RS256", typ: "JWT", kid: "side-by-side" })}.${segment({ role: "service_role", iss: ISSUER, iat: nowSeconds(), exp: nowSeconds() + 3600 })}`
  return `${input}.${sign("RSA-SHA256", Buffer.from(input), privateKey).toString("base64url")}`
})()
const admin = { bearer: adminToken }

const register = (at: string, body: Record<string, unknown>) =>
  Effect.map(raw(at, "/admin/oauth/clients", { ...admin, body: { redirect_uris: [CALLBACK], ...body } }), (r) => {
    expect(r.status, r.text).toBe(201)
    return r.json as { client_id: string; client_secret?: string }
  })

/** A code approved at `at` for `clientId`, by a user signed up there, with its verifier. */
const approvedCode = (at: string, clientId: string, scope = "email") =>
  Effect.gen(function*() {
    const { client } = authClient(at)
    const signUp = yield* call(() => client.signUp({ email: uniqueEmail("side"), password: PASSWORD }))
    expect(signUp.error).toBeNull()
    const verifier = randomBytes(32).toString("base64url")
    const query = new URLSearchParams({ client_id: clientId, redirect_uri: CALLBACK, scope, code_challenge: s256(verifier), code_challenge_method: "S256" })
    const toConsent = yield* navigate(`${at}/oauth/authorize?${query}`)
    const authorizationId = new URL(toConsent.location).searchParams.get("authorization_id")!
    yield* call(() => client.oauth.getAuthorizationDetails(authorizationId))
    const approved = yield* call(() => client.oauth.approveAuthorization(authorizationId, { skipBrowserRedirect: true }))
    expect(approved.error).toBeNull()
    return { code: new URL(approved.data!.redirect_url).searchParams.get("code")!, verifier }
  })

describe.skipIf(Option.isNone(externalDatabaseUrl) || realGoTrueMissing !== undefined)(
  realGoTrueMissing ?? "the OAuth server beside the real GoTrue, on one database",
  () => {
    layer(BesideRealGoTrue, { timeout: 180_000, excludeTestServices: true })((it) => {
      it.effect("admin registration refusals: the same status and body", () =>
        Effect.gen(function*() {
          for (const body of [
            {},
            { redirect_uris: [] },
            { redirect_uris: ["http://evil.example.com/cb"] },
            { redirect_uris: ["https://a.example.com/cb#x"] },
            { redirect_uris: ["javascript://a.example.com/x"] },
            { redirect_uris: ["not-a-uri"] },
            { redirect_uris: ["https://a.example.com/cb"], grant_types: ["implicit"] },
            { redirect_uris: ["https://a.example.com/cb"], logo_uri: "logo" },
            { redirect_uris: ["https://a.example.com/cb"], client_type: "other" },
            { redirect_uris: ["https://a.example.com/cb"], token_endpoint_auth_method: "private_key_jwt" },
            { redirect_uris: ["https://a.example.com/cb"], client_type: "public", token_endpoint_auth_method: "client_secret_basic" },
            { redirect_uris: "https://a.example.com/cb" }
          ]) {
            const answers = yield* both("/admin/oauth/clients", { ...admin, body })
            expect(answers.gatehouse, JSON.stringify(body)).toEqual(answers.gotrue)
          }
          const answers = yield* both("/admin/oauth/clients/not-a-uuid", admin)
          expect(answers.gatehouse).toEqual(answers.gotrue)
          const missing = yield* both("/admin/oauth/clients/6f1c3a2b-9d8e-4f7a-8b6c-5d4e3f2a1b0c", admin)
          expect(missing.gatehouse).toEqual(missing.gotrue)
        }))

      it.effect("/oauth/authorize and /oauth/token refusals: the same answers for a client both know", () =>
        Effect.gen(function*() {
          const client = yield* register(yield* GoTrueUrl, { client_name: "Both" })
          const id = client.client_id
          const challenge = s256("v".repeat(43))
          for (const query of [
            {},
            { client_id: id },
            { client_id: "nope", redirect_uri: CALLBACK },
            { client_id: id, redirect_uri: `${CALLBACK}/other` },
            { client_id: id, redirect_uri: CALLBACK, state: "a b~*" },
            { client_id: id, redirect_uri: CALLBACK, response_type: "token" },
            { client_id: id, redirect_uri: CALLBACK, scope: "openid admin", code_challenge: challenge, code_challenge_method: "S256" },
            { client_id: id, redirect_uri: CALLBACK, scope: "  ", code_challenge: challenge, code_challenge_method: "S256" },
            { client_id: id, redirect_uri: CALLBACK, resource: "api", code_challenge: challenge, code_challenge_method: "S256" },
            { client_id: id, redirect_uri: CALLBACK, code_challenge: challenge, code_challenge_method: "S512" },
            { client_id: id, redirect_uri: CALLBACK, code_challenge: "short", code_challenge_method: "plain" }
          ]) {
            const q = new URLSearchParams(query as Record<string, string>)
            const gatehouse = yield* navigate(`${yield* ServerUrl}/oauth/authorize?${q}`)
            const gotrue = yield* navigate(`${yield* GoTrueUrl}/oauth/authorize?${q}`)
            expect({ status: gatehouse.status, location: gatehouse.location, body: gatehouse.text === "" ? undefined : JSON.parse(gatehouse.text) }, q.toString())
              .toEqual({ status: gotrue.status, location: gotrue.location, body: gotrue.status === 302 ? undefined : JSON.parse(gotrue.text) })
          }
          const secret = client.client_secret!
          const { code, verifier } = yield* approvedCode(yield* GoTrueUrl, id)
          for (const request of [
            form({ grant_type: "authorization_code" }, { authorization: "Basic %%%" }),
            form({ grant_type: "authorization_code" }, { authorization: `Basic ${Buffer.from("nocolon").toString("base64")}` }),
            form({ grant_type: "authorization_code" }),
            form({ grant_type: "authorization_code", client_id: "nope" }),
            form({ grant_type: "authorization_code", client_id: "6f1c3a2b-9d8e-4f7a-8b6c-5d4e3f2a1b0c" }),
            form({ grant_type: "authorization_code", client_id: id, client_secret: secret }),
            form({ grant_type: "authorization_code", client_id: id }),
            form({ grant_type: "authorization_code" }, { authorization: basic(id, "wrong") }),
            form({ grant_type: "authorization_code" }, { authorization: basic(id, "") }),
            form({}, { authorization: basic(id, secret) }),
            form({ grant_type: "password" }, { authorization: basic(id, secret) }),
            form({ grant_type: "authorization_code" }, { authorization: basic(id, secret) }),
            form({ grant_type: "authorization_code", code: "nope" }, { authorization: basic(id, secret) }),
            form({ grant_type: "authorization_code", code }, { authorization: basic(id, secret) }),
            form({ grant_type: "authorization_code", code, code_verifier: "x".repeat(43) }, { authorization: basic(id, secret) }),
            form({ grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: "https://x.example.com" }, { authorization: basic(id, secret) }),
            form({ grant_type: "refresh_token" }, { authorization: basic(id, secret) }),
            { body: "{", headers: { "content-type": "application/json", authorization: basic(id, secret) } },
            { body: { client_id: 1 } }
          ] as ReadonlyArray<RawRequest>) {
            const answers = yield* both("/oauth/token", request)
            expect(answers.gatehouse, JSON.stringify(request)).toEqual(answers.gotrue)
          }
        }))

      it.effect("discovery, the consent API's and the grants' refusals: the same answers", () =>
        Effect.gen(function*() {
          const discovery = yield* both("/.well-known/openid-configuration")
          expect(discovery.gatehouse).toEqual(discovery.gotrue)
          const rfc8414 = yield* both("/.well-known/oauth-authorization-server")
          expect(rfc8414.gatehouse).toEqual(rfc8414.gotrue)
          const { client } = authClient(yield* ServerUrl)
          const signUp = yield* call(() => client.signUp({ email: uniqueEmail("side"), password: PASSWORD }))
          const bearer = signUp.data.session!.access_token
          const app = yield* register(yield* GoTrueUrl, { token_endpoint_auth_method: "none" })
          for (const [path, request] of [
            ["/oauth/authorizations/nope", { bearer }],
            ["/oauth/authorizations/nope", { bearer, headers: { origin: "https://evil.example.com" } }],
            ["/oauth/authorizations/nope", {}],
            ["/oauth/authorizations/nope/consent", { bearer, body: { action: "maybe" } }],
            ["/oauth/authorizations/nope/consent", { bearer, body: { action: "approve" } }],
            ["/user/oauth/grants", { bearer }],
            ["/user/oauth/grants", { bearer, method: "DELETE" }],
            ["/user/oauth/grants?client_id=nope", { bearer, method: "DELETE" }],
            [`/user/oauth/grants?client_id=${app.client_id}`, { bearer, method: "DELETE" }],
            ["/oauth/userinfo", { bearer }]
          ] as ReadonlyArray<readonly [string, RawRequest]>) {
            const answers = yield* both(path, request)
            expect(answers.gatehouse, `${path} ${JSON.stringify(request.body ?? "")}`).toEqual(answers.gotrue)
          }
          // A body that is no JSON at all is bad_json at both; the message is the one every Gatehouse route gives.
          const broken = yield* both("/oauth/authorizations/nope/consent", { bearer, body: "{" })
          expect(broken.gotrue.body).toMatchObject({ code: 400, error_code: "bad_json", msg: "invalid JSON body" })
          expect(broken.gatehouse.body).toMatchObject({ code: 400, error_code: "bad_json", msg: "Could not parse request body as JSON" })
        }))

      it.effect("a client either server registered works at the other; a code the other approved is exchanged", () =>
        Effect.gen(function*() {
          const gatehouseUrl = yield* ServerUrl
          const gotrueUrl = yield* GoTrueUrl
          for (const [registeredAt, usedAt] of [[gatehouseUrl, gotrueUrl], [gotrueUrl, gatehouseUrl]] as const) {
            const client = yield* register(registeredAt, {})
            const publicClient = yield* register(registeredAt, { token_endpoint_auth_method: "none" })
            const { code, verifier } = yield* approvedCode(registeredAt, client.client_id)
            const exchanged = yield* raw(usedAt, "/oauth/token", form({ grant_type: "authorization_code", code, code_verifier: verifier },
              { authorization: basic(client.client_id, client.client_secret!) }))
            expect(exchanged.status, exchanged.text).toBe(200)
            // Refreshed at Gatehouse, which reads GoTrue's refresh tokens (GoTrue reads Gatehouse's after export-sessions).
            const refreshed = yield* raw(gatehouseUrl, "/oauth/token", form({ grant_type: "refresh_token", refresh_token: exchanged.json.refresh_token },
              { authorization: basic(client.client_id, client.client_secret!) }))
            expect(refreshed.status, refreshed.text).toBe(200)
            const other = yield* approvedCode(usedAt, publicClient.client_id)
            const publicExchange = yield* raw(registeredAt, "/oauth/token",
              form({ grant_type: "authorization_code", code: other.code, code_verifier: other.verifier, client_id: publicClient.client_id }))
            expect(publicExchange.status, publicExchange.text).toBe(200)
          }
        }))

      it.effect("openid-client's client_secret_basic (RFC 6749 §2.3.1 encoding) fails at GoTrue and works at Gatehouse", () =>
        Effect.gen(function*() {
          const gatehouseUrl = yield* ServerUrl
          const client = yield* register(gatehouseUrl, {})
          const attempt = (target: string) =>
            Effect.gen(function*() {
              const config = yield* call(() =>
                oidc.discovery(new URL(ISSUER), client.client_id, undefined, oidc.ClientSecretBasic(client.client_secret!), {
                  execute: [oidc.allowInsecureRequests],
                  [oidc.customFetch]: (url, options) => fetch(url.replace(ISSUER, target), options as RequestInit)
                }))
              const { code, verifier } = yield* approvedCode(gatehouseUrl, client.client_id, "openid email")
              return yield* Effect.either(Effect.tryPromise(() =>
                oidc.authorizationCodeGrant(config, new URL(`${CALLBACK}?code=${code}`), { pkceCodeVerifier: verifier, idTokenExpected: true })))
            })
          const atGoTrue = yield* attempt(yield* GoTrueUrl)
          expect(atGoTrue._tag).toBe("Left")
          // GoTrue compares the still-encoded id ("%2D" for "-") with its clients and finds none.
          const refusal = (atGoTrue._tag === "Left" ? (atGoTrue.left as { cause?: { cause?: unknown } }).cause?.cause : undefined) as Response | undefined
          expect(refusal?.status).toBe(400)
          expect(refusal?.headers.get("x-sb-error-code")).toBe("invalid_credentials")
          const atGatehouse = yield* attempt(gatehouseUrl)
          expect(atGatehouse._tag).toBe("Right")
        }))
    })
  }
)
