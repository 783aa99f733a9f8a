import { create } from "@bufbuild/protobuf"
import { expect, layer } from "@effect/vitest"
import { Clock, Context, Effect, Layer, Logger, LogLevel, Redacted, Ref, Schedule } from "effect"
import * as pb from "../../src/gen/gatehouse/iam/v1/iam_pb.js"
import { bootstrapAdmin } from "../../src/iam/BootstrapAdmin.js"
import { IamHandlers } from "../../src/iam/IamHandlers.js"
import { testConfig } from "../support/TestServer.js"
import { iamTestEnv, IamServicesTest, IamTestServer } from "./support/IamTestServer.js"

/**
 * A second set of IAM services (a second instance) over the same database: a change made through one must
 * reach the other. Eventually, not at a fixed time: the check repeats until it holds or the test times out.
 * The real clock: the second instance's polling must run, and the test clock would never move it.
 */
const untilTrue = (check: Effect.Effect<boolean, unknown>) =>
  check.pipe(Effect.flatMap((ok) => (ok ? Effect.void : Effect.fail("not yet"))), Effect.retry(Schedule.spaced("20 millis")), Effect.orDie)

layer(IamTestServer({ AUTH_IAM_CACHE_REFRESH_INTERVAL: "100ms" }), { timeout: 120_000 })("several instances", (it) => {
  it.effect("policy changes and revocations made on one instance take effect on another", () =>
    Effect.gen(function*() {
      const first = yield* IamHandlers
      const otherLayer = IamServicesTest(testConfig(iamTestEnv({ AUTH_IAM_CACHE_REFRESH_INTERVAL: "100ms" })))
      const second = Context.get(yield* Layer.build(otherLayer), IamHandlers)
      const meta = (token?: string) => ({ authorization: token === undefined ? undefined : `Bearer ${token}` })

      const user = yield* first.Register(create(pb.RegisterRequestSchema, { username: "multi", password: "multi password", email: "m@example.com" }), meta())
      yield* bootstrapAdmin({ username: "boss", email: "boss@example.com", password: Redacted.make("boss password") })
      const admin = (yield* first.Login(create(pb.LoginRequestSchema, { identifier: { case: "username", value: "boss" }, password: "boss password" }), meta())).token!.accessToken
      const token = user.token!.accessToken
      const canDelete = (handlers: typeof first) =>
        Effect.map(handlers.CheckPermission(create(pb.CheckPermissionRequestSchema, { resource: pb.ResourceType.ORDER, action: pb.ActionType.DELETE }), meta(token)),
          (r) => r.allowed)
      expect(yield* canDelete(second)).toBe(false)

      const role = (yield* first.CreateRole(create(pb.CreateRoleRequestSchema, { name: "clerk" }), meta(admin))).role!
      const permission = (yield* first.CreatePermission(create(pb.CreatePermissionRequestSchema,
        { name: "delete orders", resource: pb.ResourceType.ORDER, action: pb.ActionType.DELETE }), meta(admin))).permission!
      yield* first.GrantPermission(create(pb.GrantPermissionRequestSchema, { roleId: role.id, permissionId: permission.id }), meta(admin))
      yield* first.AssignRole(create(pb.AssignRoleRequestSchema, { userId: user.user!.id, roleId: role.id }), meta(admin))
      expect(yield* canDelete(first)).toBe(true)
      yield* untilTrue(canDelete(second))

      yield* first.Logout(create(pb.LogoutRequestSchema), meta(token))
      yield* untilTrue(Effect.map(second.ValidateToken(create(pb.ValidateTokenRequestSchema, { token }), meta()), (r) => r.reason === "revoked"))
    }).pipe(Effect.scoped, Effect.withClock(Clock.make())))

  it.effect("no log line carries a token, a password or a password hash", () =>
    Effect.gen(function*() {
      const lines = yield* Ref.make<ReadonlyArray<string>>([])
      const capture = Logger.replace(Logger.defaultLogger, Logger.make((options) => {
        Effect.runSync(Ref.update(lines, (all) => [...all, JSON.stringify([options.message, options.annotations, String(options.cause)])]))
      }))
      const handlers = yield* IamHandlers
      const flow = Effect.gen(function*() {
        const registered = yield* handlers.Register(create(pb.RegisterRequestSchema, { username: "quiet", password: "quiet password", email: "q@example.com" }), { authorization: undefined })
        const tokens = registered.token!
        const child = yield* handlers.RefreshToken(create(pb.RefreshTokenRequestSchema, { refreshToken: tokens.refreshToken }), { authorization: undefined })
        // Once the child is spent too, the first token is no longer forgiven within the reuse interval.
        yield* handlers.RefreshToken(create(pb.RefreshTokenRequestSchema, { refreshToken: child.token!.refreshToken }), { authorization: undefined })
        // Reuse is logged (a warning), and must not quote the token.
        yield* Effect.flip(handlers.RefreshToken(create(pb.RefreshTokenRequestSchema, { refreshToken: tokens.refreshToken }), { authorization: undefined }))
        yield* Effect.flip(handlers.Login(create(pb.LoginRequestSchema, { identifier: { case: "username", value: "quiet" }, password: "wrong password" }), { authorization: undefined }))
        return tokens
      })
      const tokens = yield* flow.pipe(Effect.provide(Layer.merge(capture, Logger.minimumLogLevel(LogLevel.All))))
      const logged = (yield* Ref.get(lines)).join("\n")
      expect(logged).toContain("reuse detected")
      for (const secret of [tokens.accessToken, tokens.refreshToken, "quiet password", "wrong password", "$2"]) {
        expect(logged).not.toContain(secret)
      }
    }))
})
