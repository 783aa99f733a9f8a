import { randomUUID } from "node:crypto"
import { create } from "@bufbuild/protobuf"
import { createClient } from "@connectrpc/connect"
import { createConnectTransport } from "@connectrpc/connect-node"
import { FetchHttpClient } from "@effect/platform"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import { afterAll, expect, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Duration, Effect, Layer, Logger, LogLevel, Ref, TestClock } from "effect"
import * as OTPAuth from "otpauth"
import * as pb from "../../src/gen/gatehouse/iam/v1/iam_pb.js"
import { IamError } from "../../src/iam/domain/IamError.js"
import { NOT_LINKED, NOT_THE_LINKER } from "../../src/iam/domain/OAuthFlowRules.js"
import { IamHandlers } from "../../src/iam/IamHandlers.js"
import { IamSql } from "../../src/iam/IamSql.js"
import { IAM_RPC_PATH } from "../../src/iam/rpc/IamRpcRoutes.js"
import { IamRpcs } from "../../src/iam/rpc/IamRpcs.js"
import { browser, type Hop } from "../auth/support/Browser.js"
import { type IdpAccount, startKeycloakIdp } from "../auth/support/KeycloakIdp.js"
import { grpc, grpcClients, type Reply } from "./support/GrpcJs.js"
import { IamEndpoints, IamTestServer } from "./support/IamTestServer.js"

/**
 * OAuth2 sign-in of IAM accounts over the real server, through the auth server's keycloak provider against a real
 * OpenID provider (oidc-provider laid out as a Keycloak realm): StartOAuthSignIn, the provider's login as a browser
 * follows it, then FinishOAuthSignIn with the code and state the provider sent to the app's page. An account's holder
 * links the provider identity first (both calls with the account's access token; the provider must have verified the
 * account's email); then a sign-in (no credentials) signs in the account that linked it, and no other: an email alone
 * signs nobody in, since Register never verifies one. Never a new account. The server's clock is the test's
 * (TestClock): a flow's expiry is reached by moving it, never by sleeping.
 */

// The app's page the provider sends the browser back to: registered at the provider, and AUTH_IAM_OAUTH_REDIRECT_URI.
const IAM_REDIRECT_URI = "http://localhost:3000/iam/oauth/callback"

const accounts: Record<string, IdpAccount> = {}
const idp = await startKeycloakIdp({ redirectUri: IAM_REDIRECT_URI, accounts })
afterAll(() => idp.close())

const idpAccount = (tag: string, overrides: Partial<IdpAccount> = {}): IdpAccount => {
  const sub = `${tag}-${randomUUID().slice(0, 8)}`
  const created: IdpAccount = { sub, email: `${sub}@example.com`, email_verified: true, name: `User ${tag}`, ...overrides }
  accounts[sub] = created
  return created
}

const ENV = {
  AUTH_EXTERNAL_KEYCLOAK_ENABLED: "true",
  AUTH_EXTERNAL_KEYCLOAK_CLIENT_ID: idp.clientId,
  AUTH_EXTERNAL_KEYCLOAK_SECRET: idp.clientSecret,
  AUTH_EXTERNAL_KEYCLOAK_REDIRECT_URI: "http://localhost:9999/callback",
  AUTH_EXTERNAL_KEYCLOAK_URL: idp.realmUrl,
  AUTH_IAM_OAUTH_REDIRECT_URI: IAM_REDIRECT_URI
}

const last = (hops: ReadonlyArray<Hop>): Hop => hops[hops.length - 1]!

/** A browser at the authorization URL, logging in at the provider as `sub`: the code and state it brings the app. */
const atProvider = (authorizationUrl: string, sub: string) =>
  Effect.promise(async () => {
    const b = browser()
    const loginPage = last(await b.follow(authorizationUrl, IAM_REDIRECT_URI))
    expect(loginPage.status).toBe(200)
    expect(loginPage.url).toContain("/realms/test/interaction/")
    const back = last(await b.follow(loginPage.url, IAM_REDIRECT_URI, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ login: sub }).toString()
    })).location!
    expect(back.startsWith(`${IAM_REDIRECT_URI}?`)).toBe(true)
    const query = new URL(back).searchParams
    return { code: query.get("code")!, state: query.get("state")! }
  })

const ok = (reply: Reply): any => {
  if (!reply.ok) throw new Error(`expected OK, got ${grpc.status[reply.code]}: ${reply.details}`)
  return reply.value
}
const status = (reply: Reply): string => (reply.ok ? "OK" : grpc.status[reply.code]!)
const detailsOf = (reply: Reply): string => (reply.ok ? "" : reply.details)

const post = (url: string, body: unknown, token?: string) =>
  Effect.promise(async () => {
    const headers: Record<string, string> = { "content-type": "application/json", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) }
    const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) })
    return { status: response.status, body: await response.json() as any }
  })

const Clients = Effect.gen(function*() {
  const { grpc: address, http } = yield* IamEndpoints
  const grpcJs = grpcClients(address)
  yield* Effect.addFinalizer(() => Effect.sync(grpcJs.close))
  const call = (method: string, request: object, token?: string) =>
    Effect.promise(() => grpcJs.call("AuthService", method, request, token))
  const connect = createClient(pb.AuthService, createConnectTransport({ baseUrl: `http://${address}`, httpVersion: "1.1" }))
  const register = (name: string, email: string) =>
    Effect.map(call("Register", { username: name, password: `${name} password`, email }), ok)
  /** Started over gRPC with keycloak (a link with `token`, a sign-in without), and the provider's login done as `sub`. */
  const signInAt = (sub: string, token?: string) =>
    Effect.gen(function*() {
      const started = ok(yield* call("StartOAuthSignIn", { provider: "keycloak" }, token))
      return { started, ...yield* atProvider(started.authorization_url, sub) }
    })
  /** The account holder (`token`) links the provider identity `sub`: the finish's answer. */
  const link = (sub: string, token: string) =>
    Effect.gen(function*() {
      const { code, state } = yield* signInAt(sub, token)
      return yield* call("FinishOAuthSignIn", { code, state }, token)
    })
  return { http, call, connect, register, signInAt, link }
})

/** As TwoStep.test: the clock moves by whole minutes, so periodic sweeps run once per minute passed. */
const aMinuteOn = TestClock.adjust(Duration.minutes(1))

layer(IamTestServer(ENV), { timeout: 120_000 })("IAM OAuth2 sign-in (keycloak, a real OpenID provider)", (it) => {
  it.scoped("the holder links the identity (the provider verified the account's email); then a sign-in gets that account's tokens; states are single use", () =>
    Effect.gen(function*() {
      yield* aMinuteOn
      const { call, link, register, signInAt } = yield* Clients
      const alice = idpAccount("alice")
      const registered = yield* register("oauth-alice", alice.email.toUpperCase())

      // Before any link, the provider's verified email alone signs nobody in, not even the account that has it.
      const early = yield* signInAt(alice.sub)
      const unlinked = yield* call("FinishOAuthSignIn", { code: early.code, state: early.state })
      expect(status(unlinked)).toBe("UNAUTHENTICATED")
      expect(detailsOf(unlinked)).toBe(NOT_LINKED)

      const linked = ok(yield* link(alice.sub, registered.token.access_token))
      expect(linked.user.id).toBe(registered.user.id)

      const started = ok(yield* call("StartOAuthSignIn", { provider: "keycloak" }))
      expect(started.state).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(Number(started.expires_at.seconds) * 1000 - (yield* Clock.currentTimeMillis)).toBe(10 * 60_000)
      const toProvider = new URL(started.authorization_url)
      expect(`${toProvider.origin}${toProvider.pathname}`).toBe(`${idp.realmUrl}/protocol/openid-connect/auth`)
      expect(toProvider.searchParams.get("client_id")).toBe(idp.clientId)
      expect(toProvider.searchParams.get("redirect_uri")).toBe(IAM_REDIRECT_URI)
      expect(toProvider.searchParams.get("state")).toBe(started.state)
      expect(toProvider.searchParams.get("code_challenge_method")).toBe("S256")

      const { code, state } = yield* atProvider(started.authorization_url, alice.sub)
      expect(state).toBe(started.state)
      const finished = ok(yield* call("FinishOAuthSignIn", { code, state }))
      expect(finished.second_step).toBeNull()
      expect(finished.user.id).toBe(registered.user.id)
      expect(finished.user.username).toBe("oauth-alice")
      const validated = ok(yield* call("ValidateToken", { token: finished.token.access_token }))
      expect(validated.valid).toBe(true)
      expect(validated.user_id).toBe(registered.user.id)

      // The state was spent by the first finish: a replay, even with the same code, signs nobody in.
      const replay = yield* call("FinishOAuthSignIn", { code, state })
      expect(status(replay)).toBe("UNAUTHENTICATED")
      expect(detailsOf(replay)).toBe("state is not valid")

      // Linked by the provider's subject: a later change of the email at the provider does not unlink.
      accounts[alice.sub] = { ...alice, email: `changed-${alice.email}` }
      const later = yield* signInAt(alice.sub)
      expect(ok(yield* call("FinishOAuthSignIn", { code: later.code, state: later.state })).user.id).toBe(registered.user.id)
    }))

  it.scoped("a squatter who registered someone's email first: that person's sign-in reaches no account, and a link the squatter started does not bind them", () =>
    Effect.gen(function*() {
      yield* aMinuteOn
      const { call, register, signInAt } = yield* Clients
      const victim = idpAccount("victim")
      const squatter = yield* register("oauth-squatter", victim.email)

      // The victim signs in through the provider, which verified the address the squatter put on an account.
      const signIn = yield* signInAt(victim.sub)
      const refused = yield* call("FinishOAuthSignIn", { code: signIn.code, state: signIn.state })
      expect(status(refused)).toBe("UNAUTHENTICATED")
      expect(detailsOf(refused)).toBe(NOT_LINKED)

      // The squatter starts a link and gets the victim to follow its URL and log in at the provider: the app's page
      // then finishes with the victim's browser, which holds no squatter credentials.
      const lure = yield* signInAt(victim.sub, squatter.token.access_token)
      const lured = yield* call("FinishOAuthSignIn", { code: lure.code, state: lure.state })
      expect(status(lured)).toBe("UNAUTHENTICATED")
      expect(detailsOf(lured)).toBe(NOT_THE_LINKER)

      // Nothing was linked: the victim's next sign-in still reaches no account.
      const again = yield* signInAt(victim.sub)
      expect(detailsOf(yield* call("FinishOAuthSignIn", { code: again.code, state: again.state }))).toBe(NOT_LINKED)
    }))

  it.scoped("REST, Connect and the @effect/rpc group serve the same two RPCs", () =>
    Effect.gen(function*() {
      yield* aMinuteOn
      const { connect, http, register } = yield* Clients
      const bob = idpAccount("bob")
      const registered = yield* register("oauth-bob", bob.email)

      // The link over REST: the account's access token in the Authorization header of both calls.
      const token = registered.token.access_token
      const linkStarted = yield* post(`${http}/auth/oauth/start`, { provider: "keycloak" }, token)
      expect(linkStarted.status).toBe(200)
      const linked = yield* post(`${http}/auth/oauth/finish`, yield* atProvider(linkStarted.body.authorization_url, bob.sub), token)
      expect(linked.status).toBe(200)
      expect(linked.body.user.id).toBe(registered.user.id)

      const started = yield* post(`${http}/auth/oauth/start`, { provider: "keycloak" })
      expect(started.status).toBe(200)
      const viaRest = yield* atProvider(started.body.authorization_url, bob.sub)
      const finished = yield* post(`${http}/auth/oauth/finish`, viaRest)
      expect(finished.status).toBe(200)
      expect(Object.keys(finished.body).sort()).toEqual(["token", "user"])
      expect(finished.body.user.id).toBe(registered.user.id)

      const startedConnect = yield* Effect.promise(() => connect.startOAuthSignIn({ provider: "keycloak" }))
      const viaConnect = yield* atProvider(startedConnect.authorizationUrl, bob.sub)
      const finishedConnect = yield* Effect.promise(() => connect.finishOAuthSignIn(viaConnect))
      expect(finishedConnect.user?.id).toBe(registered.user.id)
      expect(finishedConnect.token?.accessToken).not.toBe("")

      const rpc = yield* RpcClient.make(IamRpcs).pipe(
        Effect.provide(RpcClient.layerProtocolHttp({ url: `${http}${IAM_RPC_PATH}` }).pipe(
          Layer.provide(FetchHttpClient.layer),
          Layer.provide(RpcSerialization.layerNdjson)
        ))
      )
      const startedRpc = yield* rpc.StartOAuthSignIn(create(pb.StartOAuthSignInRequestSchema, { provider: "keycloak" }))
      const viaRpc = yield* atProvider(startedRpc.authorizationUrl, bob.sub)
      const finishedRpc = yield* rpc.FinishOAuthSignIn(create(pb.FinishOAuthSignInRequestSchema, viaRpc))
      expect(finishedRpc.user?.id).toBe(registered.user.id)
      const replayed = yield* Effect.flip(rpc.FinishOAuthSignIn(create(pb.FinishOAuthSignInRequestSchema, viaRpc)))
      expect(replayed).toBeInstanceOf(IamError)
      expect((replayed as IamError).code).toBe("unauthenticated")
    }))

  it.scoped("an email the provider has not verified, or not the account's, links nothing", () =>
    Effect.gen(function*() {
      yield* aMinuteOn
      const { call, link, register, signInAt } = yield* Clients
      const mallory = idpAccount("mallory", { email_verified: false })
      const holder = yield* register("oauth-unverified", mallory.email)
      const refused = yield* link(mallory.sub, holder.token.access_token)
      expect(status(refused)).toBe("UNAUTHENTICATED")
      expect(detailsOf(refused)).toBe("the provider has not verified this email")
      const other = idpAccount("other")
      const mismatch = yield* link(other.sub, holder.token.access_token)
      expect(status(mismatch)).toBe("UNAUTHENTICATED")
      expect(detailsOf(mismatch)).toBe("the provider's verified email is not this account's")
      for (const sub of [mallory.sub, other.sub]) {
        const { code, state } = yield* signInAt(sub)
        expect(detailsOf(yield* call("FinishOAuthSignIn", { code, state }))).toBe(NOT_LINKED)
      }
    }))

  it.scoped("a verified email no account has is refused, and no account is made for it", () =>
    Effect.gen(function*() {
      yield* aMinuteOn
      const { call, register, signInAt } = yield* Clients
      const carol = idpAccount("carol")
      const { code, state } = yield* signInAt(carol.sub)
      const refused = yield* call("FinishOAuthSignIn", { code, state })
      expect(status(refused)).toBe("UNAUTHENTICATED")
      expect(detailsOf(refused)).toBe(NOT_LINKED)
      // Registering that email still works: the refused sign-in created nothing.
      const registered = yield* register("oauth-carol", carol.email)
      expect(registered.user.email).toBe(carol.email)
    }))

  it.scoped("a state past AUTH_IAM_OAUTH_FLOW_TTL (10m) is refused", () =>
    Effect.gen(function*() {
      yield* aMinuteOn
      const { call, link, register, signInAt } = yield* Clients
      const dora = idpAccount("dora")
      ok(yield* link(dora.sub, (yield* register("oauth-dora", dora.email)).token.access_token))
      const { code, state } = yield* signInAt(dora.sub)
      yield* TestClock.adjust(Duration.minutes(11))
      const refused = yield* call("FinishOAuthSignIn", { code, state })
      expect(status(refused)).toBe("UNAUTHENTICATED")
      // Expired, or already swept by the housekeeping that deletes expired flows: gone either way.
      expect(detailsOf(refused)).toMatch(/^(sign-in has expired: start again|state is not valid)$/)
    }))

  it.scoped("an account with two-step verification gets second_step, and LoginSecondStep the tokens", () =>
    Effect.gen(function*() {
      yield* aMinuteOn
      const { call, link, register, signInAt } = yield* Clients
      const erin = idpAccount("erin")
      const registered = yield* register("oauth-erin", erin.email)
      const token = registered.token.access_token
      ok(yield* link(erin.sub, token))
      const enrollment = ok(yield* call("EnrollTotp", {}, token))
      const appCode = Effect.map(Clock.currentTimeMillis, (now) =>
        new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(enrollment.secret), algorithm: "SHA1", digits: 6, period: 30 })
          .generate({ timestamp: now }))
      ok(yield* call("VerifyTotpEnrollment", { code: yield* appCode }, token))
      yield* aMinuteOn

      const { code, state } = yield* signInAt(erin.sub)
      const finished = ok(yield* call("FinishOAuthSignIn", { code, state }))
      expect(finished.user).toBeNull()
      expect(finished.token).toBeNull()
      expect(finished.second_step.methods).toEqual(["totp"])
      const second = ok(yield* call("LoginSecondStep", { ticket: finished.second_step.ticket, code: yield* appCode }))
      expect(second.user.id).toBe(registered.user.id)
      expect(second.token.access_token).not.toBe("")
    }))

  it.scoped("the state is kept only as its digest, and no log line holds the state, the code, the verifier or a token", () =>
    Effect.gen(function*() {
      yield* aMinuteOn
      const { register } = yield* Clients
      const handlers = yield* IamHandlers
      const sql = yield* SqlClient.SqlClient
      const { table } = yield* IamSql
      const quiet = idpAccount("quiet")
      const registered = yield* register("oauth-quiet", quiet.email)
      const lines = yield* Ref.make<ReadonlyArray<string>>([])
      const capture = Logger.replace(Logger.defaultLogger, Logger.make((options) => {
        Effect.runSync(Ref.update(lines, (all) => [...all, JSON.stringify([options.message, options.annotations, String(options.cause)])]))
      }))
      const none = { authorization: undefined }
      const holder = { authorization: `Bearer ${registered.token.access_token}` }
      const flow = Effect.gen(function*() {
        const linking = yield* handlers.StartOAuthSignIn(create(pb.StartOAuthSignInRequestSchema, { provider: "keycloak" }), holder)
        const linked = yield* handlers.FinishOAuthSignIn(create(pb.FinishOAuthSignInRequestSchema, yield* atProvider(linking.authorizationUrl, quiet.sub)), holder)
        expect(linked.user?.id).toBe(registered.user.id)
        const started = yield* handlers.StartOAuthSignIn(create(pb.StartOAuthSignInRequestSchema, { provider: "keycloak" }), none)
        const stored = yield* sql<{ state_hash: string; code_verifier: string }>`SELECT state_hash, code_verifier FROM ${sql(table.oauth_flows)}`
        expect(stored.map((row) => row.state_hash)).not.toContain(started.state)
        const verifier = stored.find((row) => row.code_verifier !== null)!.code_verifier
        const { code, state } = yield* atProvider(started.authorizationUrl, quiet.sub)
        // A refused exchange logs the provider's reason: never the code sent with it.
        const refused = yield* handlers.StartOAuthSignIn(create(pb.StartOAuthSignInRequestSchema, { provider: "keycloak" }), none)
        yield* Effect.flip(handlers.FinishOAuthSignIn(create(pb.FinishOAuthSignInRequestSchema, { code: `${code}x`, state: refused.state }), none))
        const finished = yield* handlers.FinishOAuthSignIn(create(pb.FinishOAuthSignInRequestSchema, { code, state }), none)
        return [linking.state, started.state, refused.state, code, verifier, finished.token!.accessToken, finished.token!.refreshToken]
      })
      const secrets = yield* flow.pipe(Effect.provide(Layer.merge(capture, Logger.minimumLogLevel(LogLevel.All))))
      const logged = (yield* Ref.get(lines)).join("\n")
      expect(logged).toContain("keycloak OAuth sign-in exchange failed")
      for (const secret of secrets) expect(logged).not.toContain(secret)
    }))

  it.scoped("malformed and unknown input: INVALID_ARGUMENT or UNAUTHENTICATED, never a 500", () =>
    Effect.gen(function*() {
      yield* aMinuteOn
      const { call, http } = yield* Clients
      expect(status(yield* call("StartOAuthSignIn", {}))).toBe("INVALID_ARGUMENT")
      const github = yield* call("StartOAuthSignIn", { provider: "github" })
      expect(status(github)).toBe("INVALID_ARGUMENT")
      expect(detailsOf(github)).toBe("unsupported provider: github")
      expect(status(yield* call("StartOAuthSignIn", { provider: "nope" }))).toBe("INVALID_ARGUMENT")
      // Credentials that do not authenticate are refused, never taken for a sign-in without any.
      expect(status(yield* call("StartOAuthSignIn", { provider: "keycloak" }, "not-a-token"))).toBe("UNAUTHENTICATED")
      expect(status(yield* call("FinishOAuthSignIn", { state: "s" }))).toBe("INVALID_ARGUMENT")
      expect(status(yield* call("FinishOAuthSignIn", { code: "c" }))).toBe("INVALID_ARGUMENT")
      expect(status(yield* call("FinishOAuthSignIn", { code: "c", state: "never-issued" }))).toBe("UNAUTHENTICATED")
      // A started flow finished with a code the provider never issued: the provider refuses, and the state is spent.
      const started = ok(yield* call("StartOAuthSignIn", { provider: "keycloak" }))
      const forged = yield* call("FinishOAuthSignIn", { code: "forged", state: started.state })
      expect(status(forged)).toBe("UNAUTHENTICATED")
      expect(detailsOf(forged)).toBe("the provider did not confirm the sign-in")
      expect(detailsOf(yield* call("FinishOAuthSignIn", { code: "forged", state: started.state }))).toBe("state is not valid")
      const rest = yield* post(`${http}/auth/oauth/finish`, { code: 5 })
      expect(rest.status).toBe(400)
    }))
})

layer(IamTestServer(), { timeout: 120_000 })("IAM OAuth2 sign-in, off (no AUTH_IAM_OAUTH_REDIRECT_URI)", (it) => {
  it.scoped("both RPCs answer FAILED_PRECONDITION", () =>
    Effect.gen(function*() {
      const { call } = yield* Clients
      const start = yield* call("StartOAuthSignIn", { provider: "keycloak" })
      expect(status(start)).toBe("FAILED_PRECONDITION")
      expect(detailsOf(start)).toBe("OAuth2 sign-in is off: set AUTH_IAM_OAUTH_REDIRECT_URI")
      expect(status(yield* call("FinishOAuthSignIn", { code: "c", state: "s" }))).toBe("FAILED_PRECONDITION")
    }))
})

