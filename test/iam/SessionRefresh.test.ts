import { create } from "@bufbuild/protobuf"
import { type Timestamp, timestampDate } from "@bufbuild/protobuf/wkt"
import { Code, ConnectError, createClient } from "@connectrpc/connect"
import { createConnectTransport } from "@connectrpc/connect-node"
import { expect, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Redacted, TestClock } from "effect"
import * as pb from "../../src/gen/gatehouse/iam/v1/iam_pb.js"
import { bootstrapAdmin } from "../../src/iam/BootstrapAdmin.js"
import { IamHandlers } from "../../src/iam/IamHandlers.js"
import { testConfig } from "../support/TestServer.js"
import { grpcClients } from "./support/GrpcJs.js"
import { IamEndpoints, iamTestEnv, IamServicesTest, IamTestServer } from "./support/IamTestServer.js"

/**
 * Sessions over real clients: GenerateToken's ttl_seconds as the session's end, and refreshes of one token at once.
 * The server's clock is the test's (TestClock): the session's end and the reuse interval are passed by moving it,
 * never by sleeping. The concurrency is real: the refreshes are sent together and race on the database.
 */
const ms = (t: Timestamp | undefined) => timestampDate(t!).getTime()
const failure = (p: Promise<unknown>) => p.then(() => "OK", (e: unknown) => Code[ConnectError.from(e).code])

const Clients = Effect.gen(function*() {
  const { grpc } = yield* IamEndpoints
  const auth = createClient(pb.AuthService, createConnectTransport({ baseUrl: `http://${grpc}`, httpVersion: "1.1" }))
  const register = (name: string) =>
    Effect.promise(() => auth.register({ username: name, password: `${name} password`, email: `${name}@example.com` }))
  const refresh = (refreshToken: string) => auth.refreshToken({ refreshToken }).then((r) => r.token!)
  const valid = (token: string) => Effect.promise(() => auth.validateToken({ token }))
  return { auth, grpc, register, refresh, valid }
})

/** A second instance of the IAM services over the same database, called directly. */
const secondInstance = (env: Readonly<Record<string, string>> = {}) =>
  Effect.map(Layer.build(IamServicesTest(testConfig(iamTestEnv(env)))), (context) => Context.get(context, IamHandlers))

layer(IamTestServer(), { timeout: 120_000 })("IAM sessions", (it) => {
  it.scoped("refreshes of one token at once, over Connect, gRPC and another instance, all get the same child", () =>
    Effect.gen(function*() {
      const { grpc, refresh, register, valid } = yield* Clients
      const first = (yield* register("racer")).token!
      const grpcJs = grpcClients(grpc)
      yield* Effect.addFinalizer(() => Effect.sync(grpcJs.close))
      const second = yield* secondInstance()

      // Sent together: 16 over Connect, one over gRPC from @grpc/grpc-js, one on another instance.
      const [children, grpcResult, elsewhere] = yield* Effect.all([
        Effect.all(Array.from({ length: 16 }, () => Effect.promise(() => refresh(first.refreshToken))), { concurrency: "unbounded" }),
        Effect.promise(() => grpcJs.call("AuthService", "RefreshToken", { refresh_token: first.refreshToken })),
        Effect.map(second.RefreshToken(create(pb.RefreshTokenRequestSchema, { refreshToken: first.refreshToken }), { authorization: undefined }),
          (r) => r.token!)
      ], { concurrency: "unbounded" })
      expect(grpcResult.ok).toBe(true)
      const viaGrpc = grpcResult.ok ? grpcResult.value.token : undefined
      const refreshTokens = new Set([...children.map((c) => c.refreshToken), viaGrpc.refresh_token, elsewhere.refreshToken])
      expect(refreshTokens.size).toBe(1)
      const [child] = [...refreshTokens]
      expect(child).not.toBe(first.refreshToken)
      for (const access of [...children.map((c) => c.accessToken), viaGrpc.access_token, elsewhere.accessToken]) {
        expect((yield* valid(access)).valid).toBe(true)
      }
      // The family lives on: the child rotates as usual.
      const next = yield* Effect.promise(() => refresh(child!))
      expect((yield* valid(next.accessToken)).valid).toBe(true)
    }))

  it.scoped("the first token again after the interval is reuse: the whole family is revoked", () =>
    Effect.gen(function*() {
      const { refresh, register, valid } = yield* Clients
      const first = (yield* register("late")).token!
      const child = yield* Effect.promise(() => refresh(first.refreshToken))

      // Within the interval (10 s by default, inclusive) a retry gets the same child.
      yield* TestClock.adjust(Duration.seconds(10))
      expect((yield* Effect.promise(() => refresh(first.refreshToken))).refreshToken).toBe(child.refreshToken)

      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* Effect.promise(() => failure(refresh(first.refreshToken)))).toBe("Unauthenticated")
      expect(yield* valid(child.accessToken)).toMatchObject({ valid: false, reason: "revoked" })
      expect(yield* Effect.promise(() => failure(refresh(child.refreshToken)))).toBe("Unauthenticated")
    }))

  it.scoped("the first token again once its child was itself refreshed is reuse, however soon", () =>
    Effect.gen(function*() {
      const { refresh, register, valid } = yield* Clients
      const first = (yield* register("moved-on")).token!
      const child = yield* Effect.promise(() => refresh(first.refreshToken))
      const grandchild = yield* Effect.promise(() => refresh(child.refreshToken))
      expect(yield* Effect.promise(() => failure(refresh(first.refreshToken)))).toBe("Unauthenticated")
      expect(yield* valid(grandchild.accessToken)).toMatchObject({ valid: false, reason: "revoked" })
    }))
})

// Short lifetimes, so that the test's clock passes them in few steps (every cache poll on the way runs), and no
// reuse interval.
const SHORT = {
  AUTH_IAM_ACCESS_TOKEN_TTL: "10s",
  AUTH_IAM_REFRESH_TOKEN_TTL: "1m",
  AUTH_IAM_REFRESH_TOKEN_REUSE_INTERVAL: "0",
  AUTH_IAM_CACHE_REFRESH_INTERVAL: "1h"
}

layer(IamTestServer(SHORT), { timeout: 120_000 })("IAM sessions with short lifetimes and no reuse interval", (it) => {
  it.scoped("GenerateToken's ttl_seconds is the whole session's: its refresh token and every token a refresh gives end by then", () =>
    Effect.gen(function*() {
      const { auth, refresh, register, valid } = yield* Clients
      const user = (yield* register("bounded")).user!
      yield* bootstrapAdmin({ username: "minter", email: "minter@example.com", password: Redacted.make("minter password") })
      // The administrator signs in afresh for each token: the test's clock runs past their own access token's life.
      const mint = (ttlSeconds: number) =>
        Effect.promise(async () => {
          const admin = (await auth.login({ identifier: { case: "username", value: "minter" }, password: "minter password" })).token!
          return (await auth.generateToken({ userId: user.id, ttlSeconds }, { headers: { authorization: `Bearer ${admin.accessToken}` } })).token!
        })

      // Two seconds: the access token and the refresh token both end two seconds from now.
      const start = Date.UTC(1970, 0, 1) + (yield* TestClock.currentTimeMillis)
      const minted = yield* mint(2)
      expect(minted.expiresIn).toBe(2)
      expect(ms(minted.expiresAt)).toBe(start + 2000)
      expect(ms(minted.refreshExpiresAt)).toBe(start + 2000)

      // A refresh one second in gives one more second, not a fresh 15 minutes or 30 days.
      yield* TestClock.adjust(Duration.seconds(1))
      const refreshed = yield* Effect.promise(() => refresh(minted.refreshToken))
      expect(refreshed.expiresIn).toBe(1)
      expect(ms(refreshed.expiresAt)).toBe(start + 2000)
      expect(ms(refreshed.refreshExpiresAt)).toBe(start + 2000)
      expect((yield* valid(refreshed.accessToken)).valid).toBe(true)

      // The session's end is on its rows: another instance bounds its refreshes the same.
      const second = yield* secondInstance(SHORT)
      yield* TestClock.adjust(Duration.millis(500))
      const elsewhere = (yield* second.RefreshToken(create(pb.RefreshTokenRequestSchema, { refreshToken: refreshed.refreshToken }),
        { authorization: undefined })).token!
      expect(ms(elsewhere.expiresAt)).toBe(start + 2000)
      expect(ms(elsewhere.refreshExpiresAt)).toBe(start + 2000)

      // At its end the session is over: no refresh; past it, its last access token has expired too.
      yield* TestClock.adjust(Duration.millis(500))
      expect(yield* Effect.promise(() => failure(refresh(elsewhere.refreshToken)))).toBe("Unauthenticated")
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* valid(elsewhere.accessToken)).toMatchObject({ valid: false, reason: "expired" })

      // Longer than the access TTL (10 s here): access tokens still live at most that, the session 30 s.
      const longer = yield* mint(30)
      const longerStart = Date.UTC(1970, 0, 1) + (yield* TestClock.currentTimeMillis)
      expect(longer.expiresIn).toBe(10)
      expect(ms(longer.refreshExpiresAt)).toBe(longerStart + 30_000)
      yield* TestClock.adjust(Duration.seconds(25))
      const late = yield* Effect.promise(() => refresh(longer.refreshToken))
      expect(late.expiresIn).toBe(5)
      expect(ms(late.refreshExpiresAt)).toBe(longerStart + 30_000)
      yield* TestClock.adjust(Duration.seconds(5))
      expect(yield* Effect.promise(() => failure(refresh(late.refreshToken)))).toBe("Unauthenticated")

      // Longer than the refresh TTL (1 minute here): the session ends when its first refresh token would have.
      const capped = yield* mint(3600)
      expect(ms(capped.refreshExpiresAt) - ms(capped.expiresAt)).toBe(50_000)

      // Without ttl_seconds (and for a sign-in) nothing changes: each refresh gets full lifetimes.
      const open = yield* mint(0)
      expect(open.expiresIn).toBe(10)
      yield* TestClock.adjust(Duration.seconds(40))
      const slid = yield* Effect.promise(() => refresh(open.refreshToken))
      expect(slid.expiresIn).toBe(10)
      expect(ms(slid.refreshExpiresAt) - ms(open.refreshExpiresAt)).toBe(40_000)
    }))

  it.scoped("the default interval is the auth server's, and 0 turns it off: a second refresh of one token is reuse", () =>
    Effect.gen(function*() {
      expect(Duration.toMillis(testConfig(iamTestEnv()).iam.refreshTokenReuseInterval)).toBe(10_000)
      const { refresh, register, valid } = yield* Clients
      const first = (yield* register("strict")).token!
      const child = yield* Effect.promise(() => refresh(first.refreshToken))
      expect(yield* Effect.promise(() => failure(refresh(first.refreshToken)))).toBe("Unauthenticated")
      expect(yield* valid(child.accessToken)).toMatchObject({ valid: false, reason: "revoked" })
    }))
})
