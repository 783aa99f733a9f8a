/**
 * Issue 15, "Attacks": what an attacker tries against both products, through real clients (fetch, auth-js,
 * @connectrpc), where the existing suites do not already try it. Already covered elsewhere, and not repeated:
 * - JWT attacks on GET /user (alg none, wrong secret, tampered payload, expired, wrong audience, HS256 keyed with the
 *   public key): test/auth/acceptance/Tokens.test.ts; on the admin API (wrong secret, expired, other role, a user's
 *   token): test/auth/acceptance/AdminAuth.test.ts; the signer's rejections one by one: test/platform/TokenSigner.test.ts.
 * - CORS preflights over HTTP: test/auth/settings/SettingsHttp.test.ts; never `*`, headers echoed: test/platform/Cors.test.ts.
 * - OTP brute force: test/auth/acceptance/Verify.test.ts ("five wrong codes invalidate the token", "wrong codes sent
 *   all at once are each counted") and OtpRecover.test.ts; across two instances: test/reliability/Instances.test.ts.
 * - Passwords over 72 bytes at sign-up and PUT /user: test/auth/acceptance/BadInput.test.ts, SessionFlows.test.ts.
 * - The URL parser behind redirect_to: test/platform/RedirectUrl.test.ts, RedirectAllowList.test.ts.
 */
import { sign as cryptoSign, generateKeyPairSync, type KeyObject } from "node:crypto"
import { createServer } from "node:http"
import { create } from "@bufbuild/protobuf"
import { Code, ConnectError, createClient } from "@connectrpc/connect"
import { createGrpcTransport } from "@connectrpc/connect-node"
import { HttpApi, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import * as NodeRsBcrypt from "@node-rs/bcrypt"
import { Context, Effect, Layer, Logger, LogLevel } from "effect"
import { AuthApi } from "../../src/auth/Api.js"
import { AdminAuthenticated } from "../../src/auth/contract/AdminAuthenticated.js"
import { configLayer } from "../../src/config/AppConfig.js"
import { AuthService, RegisterRequestSchema } from "../../src/gen/gatehouse/iam/v1/iam_pb.js"
import { IamGrpcAddress, IamGrpcServerLive } from "../../src/iam/grpc/GrpcServer.js"
import { IamServicesLive, IamWithoutOAuth } from "../../src/iam/IamLive.js"
import { migrate } from "../../src/platform/sql/Migrator.js"
import { type Bcrypt, BcryptPasswordHasher } from "../../src/platform/PasswordHasher.js"
import { AuthAndIamRoutesLive } from "../../src/cli/AuthAndIamLive.js"
import { acceptance, adminJwt, authClient, call, decodeJwt, linkIn, mailTo, nowSeconds, PASSWORD, raw, signHs256, uniqueEmail, unsigned, withPayload } from "../auth/acceptance/AcceptanceKit.js"
import { browser } from "../auth/support/Browser.js"
import { iamTestEnv } from "../iam/support/IamTestServer.js"
import { TestDatabase } from "../support/TestDatabase.js"
import { ServerUrl, TestPorts, testConfig } from "../support/TestServer.js"
import { recordFigure } from "./Figures.js"

const segment = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString("base64url")

/** An ES256 JWT signed with any P-256 key, under any header. */
const signEs256 = (payload: Record<string, unknown>, key: KeyObject, header: Record<string, unknown>): string => {
  const input = `${segment(header)}.${segment(payload)}`
  return `${input}.${cryptoSign("sha256", Buffer.from(input), { key, dsaEncoding: "ieee-p1363" }).toString("base64url")}`
}

// ---------------------------------------------------------------------------------------------------------------
// JWT attacks on the admin API, with asymmetric keys configured (where HS/RS confusion and forged kids matter).
// ---------------------------------------------------------------------------------------------------------------

const server = generateKeyPairSync("ec", { namedCurve: "P-256" })
const attacker = generateKeyPairSync("ec", { namedCurve: "P-256" })
const KID = "gatehouse-attacks-es256"
const signingJwk = { ...server.privateKey.export({ format: "jwk" }), kid: KID, alg: "ES256", use: "sig", key_ops: ["sign"] }
const ES256 = { alg: "ES256", typ: "JWT", kid: KID }

/** A token the server itself would sign: the keys `gatehouse keys` prints, with the server's private key. */
const genuine = (claims: Record<string, unknown>): string =>
  signEs256({ iss: "supabase", iat: nowSeconds(), exp: nowSeconds() + 3600, ...claims }, server.privateKey, ES256)

describe("JWT attacks with asymmetric keys", () => {
  acceptance({ AUTH_MAILER_AUTOCONFIRM: "true", AUTH_JWT_KEYS: JSON.stringify([signingJwk]) })((it) => {
    it.effect("forged service_role tokens (alg none, tampered, HS256 keyed with the public key, forged or injected kid, embedded jwk, expired) are 403 bad_jwt on the admin API and /user", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { data } = yield* call(() => authClient(url).client.signUp({ email: uniqueEmail("jwt"), password: PASSWORD }))
        const userToken = data.session!.access_token
        const claims = decodeJwt(userToken).payload
        const admin = { ...claims, role: "service_role" }
        const publicJwk = server.publicKey.export({ format: "jwk" })
        const jwks = (yield* raw(url, "/.well-known/jwks.json")).text
        const forged: Record<string, string> = {
          "alg none": unsigned(admin),
          "alg None with the kid": `${segment({ alg: "None", typ: "JWT", kid: KID })}.${segment(admin)}.`,
          "user token, payload changed to service_role, signature kept": withPayload(userToken, admin),
          "HS256 keyed with the SPKI PEM, with the kid": signHs256(admin, server.publicKey.export({ format: "pem", type: "spki" }), { alg: "HS256", typ: "JWT", kid: KID }),
          "HS256 keyed with the SPKI PEM, no kid": signHs256(admin, server.publicKey.export({ format: "pem", type: "spki" })),
          "HS256 keyed with the public JWK": signHs256(admin, JSON.stringify(publicJwk), { alg: "HS256", typ: "JWT", kid: KID }),
          "HS256 keyed with the JWKS document": signHs256(admin, jwks, { alg: "HS256", typ: "JWT", kid: KID }),
          "ES256 by the attacker's key under the server's kid": signEs256(admin, attacker.privateKey, ES256),
          "ES256 by the attacker's key under an unknown kid": signEs256(admin, attacker.privateKey, { ...ES256, kid: "attacker" }),
          "ES256 by the attacker's key with its jwk embedded": signEs256(admin, attacker.privateKey,
            { ...ES256, jwk: attacker.publicKey.export({ format: "jwk" }) }),
          "ES256 with jku pointing at the attacker": signEs256(admin, attacker.privateKey, { ...ES256, kid: "x", jku: "https://evil.example/jwks.json" }),
          "HS256 with an empty key and a path-traversal kid": signHs256(admin, "", { alg: "HS256", typ: "JWT", kid: "../../../../dev/null" }),
          "HS256 with an empty key and an SQL kid": signHs256(admin, "", { alg: "HS256", typ: "JWT", kid: "x' UNION SELECT '' --" }),
          "genuine signature, expired": genuine({ ...admin, iat: nowSeconds() - 7200, exp: nowSeconds() - 3600 }),
          "genuine signature, not yet valid": genuine({ ...admin, nbf: nowSeconds() + 3600 })
        }
        let requests = 0
        for (const [name, token] of Object.entries(forged)) {
          for (const path of ["/admin/users", `/admin/users/${claims["sub"]}`, "/user"]) {
            const response = yield* raw(url, path, { bearer: token, apiVersion: true })
            requests++
            expect([response.status, response.json?.code], `${name} on ${path}`).toEqual([403, "bad_jwt"])
          }
        }
        // The controls: the server's own tokens pass, so the refusals above are about the forgeries.
        expect((yield* raw(url, "/admin/users", { bearer: genuine({ role: "service_role" }) })).status).toBe(200)
        expect((yield* raw(url, "/user", { bearer: userToken })).status).toBe(200)
        // A genuine token for another audience still cannot read /user (GoTrue's check; the admin API has none).
        const foreign = yield* raw(url, "/user", { bearer: genuine({ ...claims, aud: "another-project" }), apiVersion: true })
        expect([foreign.status, foreign.json?.code]).toEqual([400, "validation_failed"])
        recordFigure("attacks: forged JWTs", "requests", requests + 3)
      }))

    it.effect("every admin route of the contract refuses no token (401), the anon key and a user's token (403 not_admin)", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const routes: Array<{ method: string; path: string }> = []
        HttpApi.reflect(AuthApi, {
          onGroup: () => undefined,
          onEndpoint: ({ endpoint, middleware }) => {
            if (middleware.has(AdminAuthenticated as any)) routes.push({ method: endpoint.method, path: endpoint.path })
          }
        })
        // users (list, create, create with id, get, update, delete, factors), generate_link, audit: nothing slipped out.
        expect(routes.length).toBeGreaterThanOrEqual(9)
        routes.push({ method: "POST", path: "/invite" })
        const { data } = yield* call(() => authClient(url).client.signUp({ email: uniqueEmail("not-admin"), password: PASSWORD }))
        const callers: Record<string, { token: string | undefined; status: number; code: string }> = {
          "no token": { token: undefined, status: 401, code: "no_authorization" },
          "the anon key": { token: genuine({ role: "anon" }), status: 403, code: "not_admin" },
          "a user's access token": { token: data.session!.access_token, status: 403, code: "not_admin" }
        }
        const victim = data.user!.id
        for (const route of routes) {
          const path = route.path.replace(":user_id", victim)
          for (const [name, caller] of Object.entries(callers)) {
            const response = yield* raw(url, path, {
              method: route.method,
              apiVersion: true,
              ...(caller.token === undefined ? {} : { bearer: caller.token }),
              ...(route.method === "GET" || route.method === "DELETE" ? {} : { body: { email: uniqueEmail("admin-attempt"), password: PASSWORD, role: "service_role" } })
            })
            expect([response.status, response.json?.code], `${name}: ${route.method} ${path}`).toEqual([caller.status, caller.code])
          }
        }
        recordFigure("attacks: admin routes without admin", "requests", routes.length * Object.keys(callers).length)
        // None of it took effect: the victim is still there, unchanged.
        const victimNow = yield* raw(url, `/admin/users/${victim}`, { bearer: genuine({ role: "service_role" }) })
        expect([victimNow.status, victimNow.json?.role]).toEqual([200, "authenticated"])
      }))
  })
})

// ---------------------------------------------------------------------------------------------------------------
// Open redirects through redirect_to, on sign-up confirmation links, GET /verify and /authorize.
// ---------------------------------------------------------------------------------------------------------------

const SITE_URL = "https://app.gatehouse.test"
const ALLOWED = "https://pr-7.preview.gatehouse.test/callback"

/** Each is a way to leave SITE_URL and the allow list; every one must fall back to SITE_URL. */
const EVIL_REDIRECTS = [
  // userinfo
  "https://app.gatehouse.test@evil.example/",
  "https://app.gatehouse.test:443@evil.example/",
  "https://pr-7.preview.gatehouse.test%40evil.example/",
  "https://app.gatehouse.test%2F@evil.example/",
  // backslashes
  "https://evil.example\\@app.gatehouse.test/",
  "https://app.gatehouse.test\\.evil.example/",
  "https:\\\\evil.example",
  "/\\evil.example",
  "\\\\evil.example",
  // encoded hosts
  "https://evil%2Eexample/",
  "https://%65vil.example/",
  "https://app.gatehouse.test%2Eevil.example/",
  "https://xn--80ak6aa92e.com/",
  "https://app.gatehouse.test.evil.example/",
  "https://pr-7.preview.gatehouse.test.evil.example/callback",
  "https://evil.example/.preview.gatehouse.test/",
  "https://evil.example/?https://app.gatehouse.test",
  "https://evil.example/#@app.gatehouse.test",
  // IP forms
  "http://2130706433/",
  "http://0x7f000001/",
  "http://017700000001/",
  "http://127.1/",
  "http://[::ffff:127.0.0.1]/",
  "http://169.254.169.254/latest/meta-data/",
  // scheme tricks
  "javascript:alert(document.domain)",
  "JaVaScRiPt:alert(1)//https://app.gatehouse.test",
  "java\tscript:alert(1)",
  " javascript:alert(1)",
  "data:text/html,<script>alert(1)</script>",
  "vbscript:msgbox(1)",
  "file:///etc/passwd",
  "//evil.example",
  "///evil.example",
  "//app.gatehouse.test@evil.example",
  "http://app.gatehouse.test/",
  "https:evil.example",
  "https://app.gatehouse.test\n.evil.example/",
  "https://evil.example\u3002com/"
]

/** The URL without its query or fragment: SITE_URL (with or without a slash) when the server fell back. */
const base = (location: string): string => location.split(/[#?]/)[0]!.replace(/\/$/, "")

const REDIRECT_ENV = {
  AUTH_SITE_URL: SITE_URL,
  AUTH_URI_ALLOW_LIST: "https://*.preview.gatehouse.test/**",
  AUTH_EXTERNAL_GITHUB_ENABLED: "true",
  AUTH_EXTERNAL_GITHUB_CLIENT_ID: "github-client",
  AUTH_EXTERNAL_GITHUB_SECRET: "github-secret",
  AUTH_EXTERNAL_GITHUB_REDIRECT_URI: "http://localhost:9999/callback"
}

acceptance(REDIRECT_ENV)("open redirects through redirect_to", (it) => {
  // A browser, so that /callback gets the binding cookie its /authorize set.
  const tab = browser()
  const manual = (url: string) => call(() => tab.request(url).then((r) => ({ status: r.status, location: r.headers.get("location") ?? "" })))

  /** Where the sign-up confirmation link sends the user afterwards. */
  const signupLink = (url: string, redirectTo: string) =>
    Effect.gen(function*() {
      const email = uniqueEmail("redirect")
      const response = yield* raw(url, `/signup?redirect_to=${encodeURIComponent(redirectTo)}`, { body: { email, password: PASSWORD } })
      expect(response.status, redirectTo).toBe(200)
      const [mail] = yield* mailTo(email)
      return linkIn(mail!).searchParams.get("redirect_to") ?? ""
    })

  /** Where GET /verify sends the browser for a link whose token is no good (the error path, any attacker's link). */
  const verifyTarget = (url: string, redirectTo: string) =>
    Effect.gen(function*() {
      const response = yield* manual(`${url}/verify?token=bogus&type=signup&redirect_to=${encodeURIComponent(redirectTo)}`)
      expect(response.status, redirectTo).toBe(303)
      return response.location
    })

  /** Where /callback sends the browser after /authorize stored the redirect_to and the provider said no. */
  const authorizeTarget = (url: string, redirectTo: string) =>
    Effect.gen(function*() {
      const start = yield* manual(`${url}/authorize?provider=github&redirect_to=${encodeURIComponent(redirectTo)}`)
      expect(start.status, redirectTo).toBe(302)
      const state = new URL(start.location).searchParams.get("state")!
      const back = yield* manual(`${url}/callback?${new URLSearchParams({ state, error: "access_denied", error_description: "no" })}`)
      expect([302, 303], redirectTo).toContain(back.status)
      return back.location
    })

  it.effect(`${EVIL_REDIRECTS.length} hostile redirect_to values fall back to SITE_URL on sign-up links, GET /verify and /authorize; allowed ones are kept`, () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      // Controls: the site itself and an allow-listed URL are honoured, so a fallback below is a decision.
      for (const kept of [`${SITE_URL}/welcome`, ALLOWED]) {
        expect(yield* signupLink(url, kept)).toBe(kept)
        expect(base(yield* verifyTarget(url, kept))).toBe(kept)
        expect(base(yield* authorizeTarget(url, kept))).toBe(kept)
      }
      for (const evil of EVIL_REDIRECTS) {
        expect(base(yield* signupLink(url, evil)), `sign-up link for ${JSON.stringify(evil)}`).toBe(SITE_URL)
        expect(base(yield* verifyTarget(url, evil)), `/verify for ${JSON.stringify(evil)}`).toBe(SITE_URL)
        expect(base(yield* authorizeTarget(url, evil)), `/authorize for ${JSON.stringify(evil)}`).toBe(SITE_URL)
      }
      recordFigure("attacks: open redirects", "requests", (EVIL_REDIRECTS.length + 2) * 4)
    }))
})

// ---------------------------------------------------------------------------------------------------------------
// A server of both products whose bcrypt counts its work: user enumeration, SQL injection, 72-byte passwords.
// ---------------------------------------------------------------------------------------------------------------

const work = { hash: 0, verify: 0 }
const countingBcrypt: Bcrypt = {
  hash: (password, options) => {
    work.hash++
    return (NodeRsBcrypt as unknown as Bcrypt).hash(password, options)
  },
  verify: (password, hash) => {
    work.verify++
    return (NodeRsBcrypt as unknown as Bcrypt).verify(password, hash)
  }
}

class Endpoints extends Context.Tag("test/AttackEndpoints")<Endpoints, { readonly http: string; readonly grpc: string }>() {}

const COUNTING_ENV = iamTestEnv({ AUTH_MAILER_AUTOCONFIRM: "true" })

/** Like IamTestServer (auth and IAM on one port, gRPC on another), with the counting bcrypt as PasswordHasher. */
const CountingServer = (() => {
  const config = testConfig(COUNTING_ENV)
  const endpoints = Layer.effect(Endpoints, Effect.gen(function*() {
    const http = yield* HttpServer.HttpServer
    const grpc = yield* IamGrpcAddress
    if (http.address._tag !== "TcpAddress") throw new Error("expected a TCP address")
    return { http: `http://127.0.0.1:${http.address.port}`, grpc: `127.0.0.1:${grpc.port}` }
  }))
  // Merged after TestPorts, the counting hasher replaces its PasswordHasher.
  const ports = Layer.merge(TestPorts(config), BcryptPasswordHasher({ cost: 4 }, countingBcrypt))
  return endpoints.pipe(
    Layer.provideMerge(Layer.merge(AuthAndIamRoutesLive(config), IamGrpcServerLive)),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 })),
    Layer.provideMerge(IamServicesLive),
    Layer.provideMerge(IamWithoutOAuth),
    Layer.provideMerge(ports),
    Layer.provideMerge(configLayer(config)),
    Layer.provideMerge(Layer.effectDiscard(Effect.orDie(migrate({ namespace: config.db.namespace })))),
    Layer.provideMerge(TestDatabase),
    Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)),
    Layer.orDie
  )
})()

const post = (url: string, body: unknown, bearer?: string) =>
  raw(url, "", { body, apiVersion: true, ...(bearer === undefined ? {} : { bearer }) })

/** The bcrypt verifications a request costs, and what it answered. */
const costOf = <A>(request: Effect.Effect<A>) =>
  Effect.gen(function*() {
    const before = work.verify
    const answer = yield* request
    return { verifications: work.verify - before, answer }
  })

const SQL_STRINGS = [
  "' OR '1'='1",
  "' OR 1=1 --",
  "admin'--",
  "'; DROP TABLE auth.users; --",
  "\"; DROP TABLE iam_accounts; --",
  "') OR ('x'='x",
  "1' UNION SELECT encrypted_password FROM auth.users --",
  "'||(SELECT version())||'",
  "$1 $2 $$ $tag$",
  "%' AND 1=0 UNION SELECT NULL --",
  "\\'; SET ROLE postgres; --",
  "1; COPY auth.users TO '/tmp/x'; --",
  "' AND pg_sleep(0) IS NULL --",
  "{\"$gt\": \"\"}",
  "0x27204f52202731273d2731"
]

layer(CountingServer, { timeout: 120_000, excludeTestServices: true })("a server whose bcrypt is counted", (it) => {
  it.effect("user enumeration: an unknown email, a wrong password and a password-less account each cost one bcrypt verification and answer the same", () =>
    Effect.gen(function*() {
      const { http } = yield* Endpoints
      const email = uniqueEmail("enum")
      expect((yield* raw(http, "/signup", { body: { email, password: PASSWORD } })).status).toBe(200)
      const passwordless = uniqueEmail("enum-nopw")
      expect((yield* raw(http, "/admin/users", { body: { email: passwordless, email_confirm: true }, bearer: adminJwt() })).status).toBe(200)
      const grant = (address: string, password: string) =>
        Effect.map(raw(http, "/token?grant_type=password", { body: { email: address, password }, apiVersion: true }),
          (r) => ({ status: r.status, body: r.json, errorCode: r.headers.get("x-sb-error-code") }))
      const cases = {
        "unknown email": yield* costOf(grant(uniqueEmail("nobody"), PASSWORD)),
        "wrong password": yield* costOf(grant(email, `${PASSWORD}-not`)),
        "account without a password": yield* costOf(grant(passwordless, PASSWORD))
      }
      for (const [name, { verifications, answer }] of Object.entries(cases)) {
        expect(verifications, name).toBe(1)
        expect(answer, name).toEqual(cases["wrong password"].answer)
      }
      expect(cases["unknown email"].answer.status).toBe(400)
      // The control: the right password verifies once too, and signs in.
      const right = yield* costOf(grant(email, PASSWORD))
      expect([right.verifications, right.answer.status]).toEqual([1, 200])

      // IAM's login, by username and by email.
      yield* post(`${http}/auth/register`, { username: "enum-user", password: "enum password", email: "enum-user@example.com" })
      const login = (body: Record<string, string>) =>
        Effect.map(post(`${http}/auth/login`, body), (r) => ({ status: r.status, body: r.json }))
      const iam = {
        "unknown username": yield* costOf(login({ username: "nobody-at-all", password: "enum password" })),
        "wrong password": yield* costOf(login({ username: "enum-user", password: "wrong password" })),
        "unknown email": yield* costOf(login({ email: "nobody@example.com", password: "enum password" })),
        "wrong password by email": yield* costOf(login({ email: "enum-user@example.com", password: "wrong password" }))
      }
      for (const [name, { verifications, answer }] of Object.entries(iam)) {
        expect(verifications, `IAM ${name}`).toBe(1)
        expect(answer, `IAM ${name}`).toEqual(iam["wrong password"].answer)
      }
      expect(iam["unknown username"].answer.status).toBe(401)
      recordFigure("attacks: user enumeration", "requests", 8)
    }))

  it.effect(`SQL injection: ${SQL_STRINGS.length} strings in every field of sign-up, sign-in, admin and IAM register are a 4xx or stored verbatim, never a 5xx`, () =>
    Effect.gen(function*() {
      const { http } = yield* Endpoints
      const sql = yield* SqlClient.SqlClient
      const admin = adminJwt()
      const [{ count: usersBefore }] = yield* sql<{ count: string }>`SELECT count(*)::text AS count FROM auth.users`
      let requests = 0
      const send = (path: string, options: Parameters<typeof raw>[2]) =>
        Effect.tap(raw(http, path, { apiVersion: true, ...options }), (r) => {
          requests++
          expect(r.status, `${options?.method ?? "POST"} ${path} ${JSON.stringify(options?.body)}: ${r.text}`).toBeLessThan(500)
          expect(r.status).toBeGreaterThanOrEqual(200)
        })
      for (const [i, evil] of SQL_STRINGS.entries()) {
        // In the local part of an address (quoted and not), in the password and in metadata keys and values.
        for (const email of [`${evil}@example.com`, `"${evil}"@example.com`, `x${i}@${evil}.com`]) {
          yield* send("/signup", { body: { email, password: PASSWORD } })
          yield* send("/token?grant_type=password", { body: { email, password: PASSWORD } })
          yield* send("/admin/users", { body: { email, password: PASSWORD }, bearer: admin })
          yield* send("/recover", { body: { email } })
          yield* send("/otp", { body: { email } })
        }
        yield* send("/signup", { body: { phone: evil, password: PASSWORD } })
        yield* send("/token?grant_type=password", { body: { phone: evil, password: PASSWORD } })
        yield* send("/token?grant_type=refresh_token", { body: { refresh_token: evil } })
        yield* send("/verify", { body: { type: "signup", email: `v${i}@example.com`, token: evil } })
        // GET /verify answers with a redirect (303, whatever the token); the redirect is not followed.
        const link = yield* call(() => fetch(`${http}/verify?token=${encodeURIComponent(evil)}&type=signup`, { redirect: "manual" }))
        requests++
        expect(link.status).toBe(303)
        yield* send(`/admin/users?filter=${encodeURIComponent(evil)}&page=1&per_page=5`, { method: "GET", bearer: admin })
        yield* send(`/admin/users/${encodeURIComponent(evil)}`, { method: "GET", bearer: admin })

        // Accepted: the strings come back, and sit in the database, exactly as sent.
        const email = uniqueEmail(`sqli${i}`)
        const password = `${evil}-${PASSWORD}`.slice(0, 72)
        const metadata = { [evil]: evil, nested: { value: evil } }
        const signUp = yield* send("/signup", { body: { email, password, data: metadata } })
        expect(signUp.status).toBe(200)
        const signIn = yield* send("/token?grant_type=password", { body: { email, password } })
        expect(signIn.status).toBe(200)
        expect(signIn.json.user.user_metadata).toMatchObject(metadata)
        const created = yield* send("/admin/users", {
          bearer: admin,
          body: { email: uniqueEmail(`sqli-admin${i}`), password, user_metadata: metadata, app_metadata: { note: evil }, email_confirm: true }
        })
        expect(created.status).toBe(200)
        const [row] = yield* sql<{ user_meta: string; app_meta: string }>`
          SELECT raw_user_meta_data::text AS user_meta, raw_app_meta_data::text AS app_meta FROM auth.users WHERE id = ${created.json.id}`
        expect(JSON.parse(row!.user_meta)).toMatchObject(metadata)
        expect(JSON.parse(row!.app_meta)).toMatchObject({ note: evil })
        const updated = yield* send("/user", { method: "PUT", bearer: signIn.json.access_token, body: { data: { bio: evil } } })
        expect([updated.status, updated.json.user_metadata.bio]).toEqual([200, evil])

        // IAM register: the username is checked by its rules, so these are refused or kept verbatim.
        for (const body of [
          { username: evil, password: "sql password", email: `iam${i}@example.com` },
          { username: `iam-sqli-${i}`, password: `${evil} pw`, email: `iam-sqli-${i}@example.com` },
          { username: `iam-mail-${i}`, password: "sql password", email: `${evil}@example.com` }
        ]) {
          const register = yield* send("/auth/register", { body })
          if (register.status === 200) {
            expect(register.json.user).toMatchObject({ username: body.username, email: body.email })
            const login = yield* send("/auth/login", { body: { username: body.username, password: body.password } })
            expect(login.status).toBe(200)
          } else {
            expect(register.status).toBe(400)
          }
        }
        yield* send("/auth/login", { body: { username: evil, password: evil } })
        yield* send("/auth/login", { body: { email: evil, password: evil } })
        yield* send("/auth/validate", { method: "GET", bearer: evil })
      }
      // Nothing was dropped or mass-updated: the tables are there, every user row still has its own id.
      const [{ count: usersAfter }] = yield* sql<{ count: string }>`SELECT count(*)::text AS count FROM auth.users`
      expect(Number(usersAfter)).toBeGreaterThan(Number(usersBefore))
      const [{ count: distinctPasswords }] = yield* sql<{ count: string }>`
        SELECT count(DISTINCT encrypted_password)::text AS count FROM auth.users WHERE encrypted_password <> ''`
      expect(Number(distinctPasswords)).toBeGreaterThan(1)
      recordFigure("attacks: SQL injection", "requests", requests)
    }))

  it.effect("passwords over 72 bytes: sign-up refuses them; the auth password grant, like GoTrue, checks only the first 72 bytes; IAM refuses them at register and login", () =>
    Effect.gen(function*() {
      const { http, grpc } = yield* Endpoints
      const seventyTwo = `Aa1-${"é".repeat(20)}${"x".repeat(28)}`
      expect(Buffer.byteLength(seventyTwo)).toBe(72)
      const longer = `${seventyTwo}and more`
      // Multi-byte characters: 40 characters but 80 bytes.
      const fewCharsManyBytes = "é".repeat(40)

      const refused = yield* raw(http, "/signup", { body: { email: uniqueEmail("long"), password: fewCharsManyBytes }, apiVersion: true })
      expect([refused.status, refused.json?.message]).toEqual([400, "Password cannot be longer than 72 characters"])
      const email = uniqueEmail("seventy-two")
      expect((yield* raw(http, "/signup", { body: { email, password: seventyTwo } })).status).toBe(200)
      const grant = (password: string) => raw(http, "/token?grant_type=password", { body: { email, password }, apiVersion: true })
      expect((yield* grant(seventyTwo)).status).toBe(200)
      // GoTrue's Go bcrypt compares only the first 72 bytes, so this signs in there too; whoever knows 72 bytes of
      // the password knows all of it that was ever stored.
      expect((yield* grant(longer)).status).toBe(200)
      // A different 72nd byte is a different password.
      expect((yield* grant(`${seventyTwo.slice(0, -1)}y`)).status).toBe(400)
      const session = (yield* grant(seventyTwo)).json
      const update = yield* raw(http, "/user", { method: "PUT", bearer: session.access_token, body: { password: fewCharsManyBytes }, apiVersion: true })
      expect([update.status, update.json?.message]).toEqual([400, "Password cannot be longer than 72 characters"])

      // IAM, over REST and gRPC.
      const rest = yield* post(`${http}/auth/register`, { username: "long-rest", password: longer, email: "long-rest@example.com" })
      expect([rest.status, rest.json?.code]).toEqual([400, "invalid_argument"])
      const client = createClient(AuthService, createGrpcTransport({ baseUrl: `http://${grpc}` }))
      const viaGrpc = yield* call(() =>
        client.register(create(RegisterRequestSchema, { username: "long-grpc", password: fewCharsManyBytes, email: "long-grpc@example.com" }))
          .then(() => undefined, (e) => ConnectError.from(e)))
      expect(viaGrpc?.code).toBe(Code.InvalidArgument)
      const ok = yield* post(`${http}/auth/register`, { username: "exact-72", password: seventyTwo, email: "exact-72@example.com" })
      expect(ok.status).toBe(200)
      const login = yield* post(`${http}/auth/login`, { username: "exact-72", password: longer })
      expect([login.status, login.json?.code]).toEqual([400, "invalid_argument"])
      expect((yield* post(`${http}/auth/login`, { username: "exact-72", password: seventyTwo })).status).toBe(200)
      recordFigure("attacks: long passwords", "requests", 11)
    }))
})
