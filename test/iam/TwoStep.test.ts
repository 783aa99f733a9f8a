import { timestampDate } from "@bufbuild/protobuf/wkt"
import { Code, ConnectError, createClient } from "@connectrpc/connect"
import { createConnectTransport } from "@connectrpc/connect-node"
import { expect, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { create } from "@bufbuild/protobuf"
import { Clock, Duration, Effect, Layer, Logger, LogLevel, Redacted, Ref, TestClock } from "effect"
import * as OTPAuth from "otpauth"
import * as pb from "../../src/gen/gatehouse/iam/v1/iam_pb.js"
import { bootstrapAdmin } from "../../src/iam/BootstrapAdmin.js"
import { IamHandlers } from "../../src/iam/IamHandlers.js"
import { IamSql } from "../../src/iam/IamSql.js"
import { grpc, grpcClients, type Reply } from "./support/GrpcJs.js"
import { IamEndpoints, IamTestServer } from "./support/IamTestServer.js"

/**
 * Two-step verification (TOTP) over the real server: @grpc/grpc-js built from the proto, the generated Connect
 * client, and REST with fetch. The server's clock is the test's (TestClock), so the codes an authenticator app would
 * show are computed here for the server's time, with an independent TOTP implementation (otpauth), and a ticket's
 * expiry or a code's next time step is reached by moving the clock, never by sleeping.
 */

/** The code an app shows for `secret` at the server's time, `steps` time steps from now. */
const appCode = (secret: string, steps = 0) =>
  Effect.map(Clock.currentTimeMillis, (now) =>
    new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 })
      .generate({ timestamp: now + steps * 30_000 }))

/** A 6-digit code that is none of the three the server accepts now (the step before, now, the step after). */
const wrongCode = (secret: string) =>
  Effect.gen(function*() {
    const valid = [yield* appCode(secret, -1), yield* appCode(secret), yield* appCode(secret, 1)]
    let n = Number(valid[1]!)
    let code: string
    do {
      n = (n + 1) % 1_000_000
      code = String(n).padStart(6, "0")
    } while (valid.includes(code))
    return code
  })

/** The next time step: a code accepted now cannot be accepted again, the next one can. */
const nextStep = TestClock.adjust(Duration.seconds(30))

const ok = (reply: Reply): any => {
  if (!reply.ok) throw new Error(`expected OK, got ${grpc.status[reply.code]}: ${reply.details}`)
  return reply.value
}
const code = (reply: Reply): string => (reply.ok ? "OK" : grpc.status[reply.code]!)

const post = (url: string, body: unknown, token?: string) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(body)
  })

const connectFailure = (p: Promise<unknown>) => p.then(() => "OK", (e: unknown) => Code[ConnectError.from(e).code])

/**
 * Each test first moves the clock a minute on, so no code is asked for near the epoch's first time step. The clock is
 * only ever moved by minutes: TestClock runs every periodic task (cache refreshes, sweeps) once per period it passes.
 */
const aMinuteOn = TestClock.adjust(Duration.minutes(1))

const Clients = Effect.gen(function*() {
  const { grpc: address, http } = yield* IamEndpoints
  const grpcJs = grpcClients(address)
  yield* Effect.addFinalizer(() => Effect.sync(grpcJs.close))
  const call = (method: string, request: object, token?: string) =>
    Effect.promise(() => grpcJs.call("AuthService", method, request, token))
  const connect = createClient(pb.AuthService, createConnectTransport({ baseUrl: `http://${address}`, httpVersion: "1.1" }))
  /** Registers `name` and turns two-step verification on over gRPC: its secret and an access token. */
  const enrolled = (name: string) =>
    Effect.gen(function*() {
      const registered = ok(yield* call("Register", { username: name, password: `${name} password`, email: `${name}@example.com` }))
      const token = registered.token.access_token as string
      const enrollment = ok(yield* call("EnrollTotp", {}, token))
      ok(yield* call("VerifyTotpEnrollment", { code: yield* appCode(enrollment.secret) }, token))
      yield* nextStep
      return { secret: enrollment.secret as string, token, userId: registered.user.id as number }
    })
  const login = (name: string) => call("Login", { username: name, password: `${name} password` })
  return { http, call, connect, enrolled, login }
})

layer(IamTestServer(), { timeout: 120_000 })("IAM two-step verification", (it) => {
  it.scoped("an account without TOTP signs in exactly as before, on every transport: no second_step field at all", () =>
    Effect.gen(function*() {
      yield* aMinuteOn
      const { call, connect, http, login } = yield* Clients
      const registered = ok(yield* call("Register", { username: "plain", password: "plain password", email: "plain@example.com" }))

      const viaGrpc = ok(yield* login("plain"))
      expect(viaGrpc.user.username).toBe("plain")
      expect(viaGrpc.token.access_token).not.toBe("")
      expect(viaGrpc.second_step).toBeNull()

      const viaConnect = yield* Effect.promise(() => connect.login({ identifier: { case: "username", value: "plain" }, password: "plain password" }))
      expect(viaConnect.secondStep).toBeUndefined()
      expect(viaConnect.token?.accessToken).not.toBe("")

      const rest = yield* Effect.promise(() => post(`${http}/auth/login`, { username: "plain", password: "plain password" }).then((r) => r.json() as Promise<any>))
      expect(Object.keys(rest).sort()).toEqual(["token", "user"])

      // A pending enrolment (never confirmed) changes nothing either.
      const enrollment = ok(yield* call("EnrollTotp", {}, registered.token.access_token))
      expect(enrollment.secret).toMatch(/^[A-Z2-7]{32}$/)
      const afterPending = yield* Effect.promise(() => post(`${http}/auth/login`, { username: "plain", password: "plain password" }).then((r) => r.json() as Promise<any>))
      expect(Object.keys(afterPending).sort()).toEqual(["token", "user"])
    }))

  it.scoped("enrol, confirm, then Login asks for the second step, and LoginSecondStep gives the tokens (gRPC)", () =>
    Effect.gen(function*() {
      yield* aMinuteOn
      const { call } = yield* Clients
      const registered = ok(yield* call("Register", { username: "alice", password: "alice password", email: "alice@example.com" }))
      const token = registered.token.access_token

      const enrollment = ok(yield* call("EnrollTotp", {}, token))
      expect(enrollment.uri).toBe(`otpauth://totp/gatehouse-iam:alice?algorithm=SHA1&digits=6&issuer=gatehouse-iam&period=30&secret=${enrollment.secret}`)
      expect(code(yield* call("EnrollTotp", {}))).toBe("UNAUTHENTICATED")
      expect(code(yield* call("VerifyTotpEnrollment", { code: yield* wrongCode(enrollment.secret) }, token))).toBe("INVALID_ARGUMENT")
      expect(code(yield* call("VerifyTotpEnrollment", { code: "" }, token))).toBe("INVALID_ARGUMENT")
      const enrolCode = yield* appCode(enrollment.secret)
      ok(yield* call("VerifyTotpEnrollment", { code: enrolCode }, token))
      // Active now: a second enrolment is refused, and never hands out a secret again.
      const again = yield* call("EnrollTotp", {}, token)
      expect(code(again)).toBe("ALREADY_EXISTS")
      expect(code(yield* call("VerifyTotpEnrollment", { code: yield* appCode(enrollment.secret) }, token))).toBe("FAILED_PRECONDITION")

      const first = ok(yield* call("Login", { username: "alice", password: "alice password" }))
      expect(first.user).toBeNull()
      expect(first.token).toBeNull()
      expect(first.second_step.methods).toEqual(["totp"])
      const ticket = first.second_step.ticket as string
      expect(ticket.length).toBeGreaterThanOrEqual(43)
      expect(Number(first.second_step.expires_at.seconds) * 1000 - (yield* Clock.currentTimeMillis)).toBe(5 * 60_000)

      // The code accepted for the enrolment cannot be used again in its window; the next step's can.
      expect(code(yield* call("LoginSecondStep", { ticket, code: enrolCode }))).toBe("UNAUTHENTICATED")
      expect(code(yield* call("LoginSecondStep", { ticket, code: yield* wrongCode(enrollment.secret) }))).toBe("UNAUTHENTICATED")
      yield* nextStep
      const totp = yield* appCode(enrollment.secret)
      const done = ok(yield* call("LoginSecondStep", { ticket, code: totp }))
      expect(done.user.username).toBe("alice")
      expect(ok(yield* call("ValidateToken", { token: done.token.access_token })).valid).toBe(true)

      // Single use: the ticket is spent, whatever the code. And a code accepted once is refused on a new ticket while
      // it is still inside the ±1 step window (a replay), where the next step's is accepted.
      yield* nextStep
      expect(code(yield* call("LoginSecondStep", { ticket, code: yield* appCode(enrollment.secret) }))).toBe("UNAUTHENTICATED")
      const second = ok(yield* call("Login", { username: "alice", password: "alice password" })).second_step.ticket
      expect(code(yield* call("LoginSecondStep", { ticket: second, code: totp }))).toBe("UNAUTHENTICATED")
      expect(ok(yield* call("LoginSecondStep", { ticket: second, code: yield* appCode(enrollment.secret) })).user.username).toBe("alice")

      expect(code(yield* call("LoginSecondStep", { ticket: "", code: "123456" }))).toBe("INVALID_ARGUMENT")
      expect(code(yield* call("LoginSecondStep", { ticket: "made-up", code: "123456" }))).toBe("UNAUTHENTICATED")
    }))

  it.scoped("a ticket expires, and dies after its attempts; the factor then refuses every code for its window", () =>
    Effect.gen(function*() {
      yield* aMinuteOn
      const { call, enrolled, login } = yield* Clients
      const { secret } = yield* enrolled("bob")

      const late = ok(yield* login("bob")).second_step.ticket
      yield* TestClock.adjust(Duration.minutes(5))
      yield* TestClock.adjust(Duration.seconds(1))
      const expired = yield* call("LoginSecondStep", { ticket: late, code: yield* appCode(secret) })
      expect(code(expired)).toBe("UNAUTHENTICATED")
      expect(expired.ok ? "" : expired.details).toBe("ticket has expired: sign in again")

      // Five wrong codes spend a ticket (AUTH_IAM_LOGIN_TICKET_ATTEMPTS); the right one is then too late.
      const guessed = ok(yield* login("bob")).second_step.ticket
      for (let i = 0; i < 5; i++) expect(code(yield* call("LoginSecondStep", { ticket: guessed, code: yield* wrongCode(secret) }))).toBe("UNAUTHENTICATED")
      const dead = yield* call("LoginSecondStep", { ticket: guessed, code: yield* appCode(secret) })
      expect(code(dead)).toBe("UNAUTHENTICATED")
      expect(dead.ok ? "" : dead.details).toBe("ticket is not valid")

      // A new ticket does not give new guesses: ten wrong codes (AUTH_IAM_TOTP_MAX_FAILURES) lock the factor itself.
      const more = ok(yield* login("bob")).second_step.ticket
      for (let i = 0; i < 4; i++) expect(code(yield* call("LoginSecondStep", { ticket: more, code: yield* wrongCode(secret) }))).toBe("UNAUTHENTICATED")
      const fresh = ok(yield* login("bob")).second_step.ticket
      expect(code(yield* call("LoginSecondStep", { ticket: fresh, code: yield* wrongCode(secret) }))).toBe("UNAUTHENTICATED")
      const locked = yield* call("LoginSecondStep", { ticket: fresh, code: yield* appCode(secret) })
      expect(code(locked)).toBe("RESOURCE_EXHAUSTED")
      expect(locked.ok ? undefined : locked.metadata["retry-after"]).toBeDefined()

      // Once the window (AUTH_IAM_TOTP_FAILURE_WINDOW, 15 minutes) has passed, the right code is accepted again.
      yield* TestClock.adjust(Duration.minutes(15))
      const later = ok(yield* login("bob")).second_step.ticket
      expect(ok(yield* call("LoginSecondStep", { ticket: later, code: yield* appCode(secret) })).user.username).toBe("bob")
    }))

  it.scoped("RemoveTotp: the account itself with a current code, another account's only with USER/UPDATE", () =>
    Effect.gen(function*() {
      yield* aMinuteOn
      const { call, enrolled, login } = yield* Clients
      const carol = yield* enrolled("carol")
      const dave = yield* enrolled("dave")

      expect(code(yield* call("RemoveTotp", {}, carol.token))).toBe("INVALID_ARGUMENT")
      expect(code(yield* call("RemoveTotp", { code: yield* wrongCode(carol.secret) }, carol.token))).toBe("INVALID_ARGUMENT")
      expect(code(yield* call("RemoveTotp", { code: yield* appCode(carol.secret) }))).toBe("UNAUTHENTICATED")
      // Not carol's to remove: dave's factor needs USER/UPDATE, which she does not have.
      expect(code(yield* call("RemoveTotp", { user_id: dave.userId }, carol.token))).toBe("PERMISSION_DENIED")
      ok(yield* call("RemoveTotp", { code: yield* appCode(carol.secret) }, carol.token))
      expect(code(yield* call("RemoveTotp", { code: yield* appCode(carol.secret, 1) }, carol.token))).toBe("NOT_FOUND")
      const plain = ok(yield* login("carol"))
      expect(plain.second_step).toBeNull()
      expect(plain.user.username).toBe("carol")

      // An administrator resets a lost device: no code is asked for another account's factor.
      yield* bootstrapAdmin({ username: "totp-admin", email: "totp-admin@example.com", password: Redacted.make("totp-admin password") })
      const admin = ok(yield* login("totp-admin")).token.access_token
      expect(ok(yield* login("dave")).second_step).not.toBeNull()
      ok(yield* call("RemoveTotp", { user_id: dave.userId }, admin))
      expect(ok(yield* login("dave")).second_step).toBeNull()
    }))

  it.scoped("the same flow over REST and Connect: enrol, confirm, second step, remove", () =>
    Effect.gen(function*() {
      yield* aMinuteOn
      const { connect, http } = yield* Clients
      const json = (response: Promise<Response>) => Effect.promise(() => response.then(async (r) => ({ status: r.status, body: await r.json() as any })))
      const registered = yield* json(post(`${http}/auth/register`, { username: "erin", password: "erin password", email: "erin@example.com" }))
      const token = registered.body.token.access_token as string

      const enrollment = yield* json(post(`${http}/auth/totp/enroll`, {}, token))
      expect(enrollment.status).toBe(200)
      expect(Object.keys(enrollment.body).sort()).toEqual(["secret", "uri"])
      const { secret } = enrollment.body
      expect((yield* json(post(`${http}/auth/totp/verify`, { code: yield* wrongCode(secret) }, token))))
        .toEqual({ status: 400, body: { code: "invalid_argument", message: "invalid TOTP code" } })
      expect((yield* json(post(`${http}/auth/totp/verify`, { code: yield* appCode(secret) }, token))).status).toBe(200)
      yield* nextStep

      const login = yield* json(post(`${http}/auth/login`, { email: "erin@example.com", password: "erin password" }))
      expect(Object.keys(login.body)).toEqual(["second_step"])
      expect(login.body.second_step.methods).toEqual(["totp"])
      const second = yield* json(post(`${http}/auth/login/second-step`, { ticket: login.body.second_step.ticket, code: yield* appCode(secret) }))
      expect(second.status).toBe(200)
      expect(second.body.user.username).toBe("erin")
      expect(second.body.token.token_type).toBe("Bearer")
      const spent = yield* json(post(`${http}/auth/login/second-step`, { ticket: login.body.second_step.ticket, code: yield* appCode(secret) }))
      expect(spent.status).toBe(401)
      yield* nextStep

      // Connect: the generated client sees the new field and the new RPC.
      const viaConnect = yield* Effect.promise(() => connect.login({ identifier: { case: "username", value: "erin" }, password: "erin password" }))
      expect(viaConnect.token).toBeUndefined()
      expect(timestampDate(viaConnect.secondStep!.expiresAt!).getTime()).toBe((yield* Clock.currentTimeMillis) + 5 * 60_000)
      const totp = yield* appCode(secret)
      const wrong = yield* wrongCode(secret)
      expect(yield* Effect.promise(() => connectFailure(connect.loginSecondStep({ ticket: viaConnect.secondStep!.ticket, code: wrong }))))
        .toBe("Unauthenticated")
      const tokens = yield* Effect.promise(() => connect.loginSecondStep({ ticket: viaConnect.secondStep!.ticket, code: totp }))
      expect(tokens.user?.username).toBe("erin")
      yield* nextStep

      const removed = yield* json(post(`${http}/auth/users/me/totp/remove`, { code: yield* appCode(secret) }, tokens.token!.accessToken))
      expect(removed).toEqual({ status: 200, body: {} })
      const plain = yield* json(post(`${http}/auth/login`, { username: "erin", password: "erin password" }))
      expect(Object.keys(plain.body).sort()).toEqual(["token", "user"])
    }))

  it.effect("the ticket is kept only as its digest, and no log line holds the secret, the URI, a ticket or a code", () =>
    Effect.gen(function*() {
      yield* aMinuteOn
      const handlers = yield* IamHandlers
      const sql = yield* SqlClient.SqlClient
      const { table } = yield* IamSql
      const lines = yield* Ref.make<ReadonlyArray<string>>([])
      const capture = Logger.replace(Logger.defaultLogger, Logger.make((options) => {
        Effect.runSync(Ref.update(lines, (all) => [...all, JSON.stringify([options.message, options.annotations, String(options.cause)])]))
      }))
      const none = { authorization: undefined }
      const flow = Effect.gen(function*() {
        const registered = yield* handlers.Register(create(pb.RegisterRequestSchema, { username: "quiet-totp", password: "quiet password", email: "quiet-totp@example.com" }), none)
        const bearer = { authorization: `Bearer ${registered.token!.accessToken}` }
        const { secret, uri } = yield* handlers.EnrollTotp(create(pb.EnrollTotpRequestSchema), bearer)
        const codes = [yield* appCode(secret)]
        yield* handlers.VerifyTotpEnrollment(create(pb.VerifyTotpEnrollmentRequestSchema, { code: codes[0]! }), bearer)
        yield* nextStep
        const login = create(pb.LoginRequestSchema, { identifier: { case: "username", value: "quiet-totp" }, password: "quiet password" })
        const { ticket } = (yield* handlers.Login(login, none)).secondStep!
        const stored = yield* sql<{ ticket_hash: string }>`SELECT ticket_hash FROM ${sql(table.login_tickets)}`
        expect(stored.length).toBeGreaterThan(0)
        expect(stored.map((row) => row.ticket_hash)).not.toContain(ticket)
        codes.push(yield* wrongCode(secret), yield* appCode(secret))
        yield* Effect.flip(handlers.LoginSecondStep(create(pb.LoginSecondStepRequestSchema, { ticket, code: codes[1]! }), none))
        yield* handlers.LoginSecondStep(create(pb.LoginSecondStepRequestSchema, { ticket, code: codes[2]! }), none)
        // The secret is not among what any later answer carries: a second enrolment is refused without it.
        const again = yield* Effect.flip(handlers.EnrollTotp(create(pb.EnrollTotpRequestSchema), bearer))
        expect(again.code).toBe("already_exists")
        expect(JSON.stringify(again)).not.toContain(secret)
        return [secret, uri, ticket, ...codes]
      })
      const secrets = yield* flow.pipe(Effect.provide(Layer.merge(capture, Logger.minimumLogLevel(LogLevel.All))))
      const logged = (yield* Ref.get(lines)).join("\n")
      for (const secret of secrets) expect(logged).not.toContain(secret)
    }))
})
