/**
 * Faults (issue 15): the database goes away under load, SMTP goes down, the SMS and captcha providers stop
 * answering, and SIGTERM arrives during load. Every request is bounded (FaultKit.boundedFetch), so a hang fails the
 * test instead of stalling it; each test records its figures for `npm run test:reliability`.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { FetchHttpClient, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Logger, LogLevel, Option, Queue, Redacted, Schedule, Scope } from "effect"
import { type ParsedMail, simpleParser } from "mailparser"
import { SMTPServer } from "smtp-server"
import { authTables } from "../../src/auth/AuthTables.js"
import { configLayer } from "../../src/config/AppConfig.js"
import { PostgresDatabase } from "../../src/platform/sql/Database.js"
import { MemoryMailer } from "../../src/platform/mail/Mailer.js"
import { migrate } from "../../src/platform/sql/Migrator.js"
import { PasswordHasherTest } from "../../src/platform/PasswordHasher.js"
import { captchaFor, messagingFor, tokenSignerFor } from "../../src/platform/PortsLive.js"
import { SecureRandom } from "../../src/platform/SecureRandom.js"
import { TwilioSmsSender } from "../../src/platform/sms/TwilioSmsSender.js"
import { AuthRoutesLive, outboxFor } from "../../src/cli/ServerLive.js"
import { adminJwt, PASSWORD, uniqueEmail, uniquePhone } from "../auth/acceptance/AcceptanceKit.js"
import { type StubAnswer, startHttpStub } from "../platform/LocalServers.js"
import { type CuttableProxy, migratedBehindProxy } from "../support/CuttableProxy.js"
import { externalDatabaseUrl, freshDatabaseUrl, TestDatabase } from "../support/TestDatabase.js"
import { ServerUrl, testConfig, TestServer, TestServerOver } from "../support/TestServer.js"
import { boundedFetch, errorCode, inEnvelope, type Outcome, sleep } from "./FaultKit.js"
import { recordFigure } from "./Figures.js"

const quiet = Logger.minimumLogLevel(LogLevel.None)

// ---------------------------------------------------------------------------------------------------------------
// 1. PostgreSQL goes away in the middle of a load

class Outage extends Context.Tag("test/Faults/Outage")<Outage, CuttableProxy & { readonly directUrl: string }>() {}

const namespace = testConfig().db.namespace

const OverProxy = Layer.unwrapScoped(Effect.gen(function*() {
  const { proxy, url } = yield* migratedBehindProxy(namespace)
  return TestServerOver({ AUTH_MAILER_AUTOCONFIRM: "true" }).pipe(
    Layer.provide(PostgresDatabase({ url: Redacted.make(proxy.url), maxPoolSize: 8 }).pipe(Layer.orDie)),
    Layer.merge(Layer.succeed(Outage, { ...proxy, directUrl: url }))
  )
})).pipe(Layer.provide(quiet))

/**
 * Invariants of the auth tables that a half-applied write would break, one query each, counting violations. The
 * load only makes password users with autoconfirm on, so every user must be whole: password, confirmed address,
 * its email identity.
 */
const consistencyChecks = (t: ReturnType<typeof authTables>) => ({
  "refresh token whose parent is not a token of the same session": (sql: SqlClient.SqlClient) =>
    sql`SELECT count(*)::int AS n FROM ${sql(t.refresh_tokens)} c WHERE c.parent IS NOT NULL AND NOT EXISTS (
      SELECT 1 FROM ${sql(t.refresh_tokens)} p WHERE p.token = c.parent AND p.session_id = c.session_id)`,
  "session with more than one unrevoked refresh token": (sql: SqlClient.SqlClient) =>
    sql`SELECT count(*)::int AS n FROM (SELECT session_id FROM ${sql(t.refresh_tokens)} WHERE revoked = false
      GROUP BY session_id HAVING count(*) > 1) x`,
  "session without exactly one root refresh token": (sql: SqlClient.SqlClient) =>
    sql`SELECT count(*)::int AS n FROM ${sql(t.sessions)} s WHERE (SELECT count(*) FROM ${sql(t.refresh_tokens)} r
      WHERE r.session_id = s.id AND r.parent IS NULL) <> 1`,
  "refresh token with more than one child": (sql: SqlClient.SqlClient) =>
    sql`SELECT count(*)::int AS n FROM (SELECT parent FROM ${sql(t.refresh_tokens)} WHERE parent IS NOT NULL
      GROUP BY parent HAVING count(*) > 1) x`,
  "refresh token without a session, or of another user than its session's": (sql: SqlClient.SqlClient) =>
    sql`SELECT count(*)::int AS n FROM ${sql(t.refresh_tokens)} r LEFT JOIN ${sql(t.sessions)} s ON s.id = r.session_id
      WHERE s.id IS NULL OR r.user_id IS DISTINCT FROM s.user_id::text`,
  "session without its user": (sql: SqlClient.SqlClient) =>
    sql`SELECT count(*)::int AS n FROM ${sql(t.sessions)} s WHERE NOT EXISTS (
      SELECT 1 FROM ${sql(t.users)} u WHERE u.id = s.user_id)`,
  "email user without its email identity": (sql: SqlClient.SqlClient) =>
    sql`SELECT count(*)::int AS n FROM ${sql(t.users)} u WHERE u.email IS NOT NULL AND NOT EXISTS (
      SELECT 1 FROM ${sql(t.identities)} i WHERE i.user_id = u.id AND i.provider = 'email' AND i.email = lower(u.email))`,
  "user row half-written (no password, not confirmed, no role or audience)": (sql: SqlClient.SqlClient) =>
    sql`SELECT count(*)::int AS n FROM ${sql(t.users)} WHERE encrypted_password IS NULL OR encrypted_password = ''
      OR email_confirmed_at IS NULL OR role IS NULL OR aud IS NULL OR created_at IS NULL`
})

/** Error codes a client may legitimately meet when a write committed but its answer was lost to the outage. */
const LOST_ANSWER_CODES = new Set(["refresh_token_already_used", "refresh_token_not_found", "session_not_found"])

type Kind = "signup" | "password" | "refresh" | "user"

interface Observed {
  readonly kind: Kind
  readonly outcome: Outcome
}

describe.skipIf(Option.isNone(externalDatabaseUrl))("faults: PostgreSQL goes away in the middle of a load", () => {
  layer(OverProxy, { timeout: 60_000 })((it) => {
    it.effect("every answer is a success or a 503 database_unavailable, the server recovers by itself, and the tables stay consistent", () =>
      Effect.gen(function*() {
        const base = yield* ServerUrl
        const outage = yield* Outage
        const name = "postgres outage during load"
        const observed: Array<Observed> = []
        const bad: Array<string> = []
        let stop = false

        const record = (kind: Kind, outcome: Outcome) => {
          observed.push({ kind, outcome })
          if (outcome._tag === "NoAnswer") return void bad.push(`${kind}: no answer (${outcome.reason})`)
          if (outcome.status === 200) return
          if (!inEnvelope(outcome)) return void bad.push(`${kind}: ${outcome.status} outside GoTrue's envelope: ${outcome.text.slice(0, 200)}`)
          const code = errorCode(outcome)!
          if (outcome.status === 503 && code === "database_unavailable") return
          if (outcome.status < 500 && LOST_ANSWER_CODES.has(code) && (kind === "refresh" || kind === "user")) return
          bad.push(`${kind}: ${outcome.status} ${code}: ${String(outcome.json?.["msg"])}`)
        }

        /** One client: signs up, then rotates its refresh token, reads itself and signs in again, round and round. */
        const client = async (id: number) => {
          let email: string | undefined
          let session: { access: string; refresh: string } | undefined
          let step = 0
          const take = (outcome: Outcome) => {
            if (outcome._tag === "Answer" && outcome.status === 200 && typeof outcome.json?.["access_token"] === "string") {
              session = { access: String(outcome.json["access_token"]), refresh: String(outcome.json["refresh_token"]) }
            }
          }
          while (!stop) {
            if (email === undefined) {
              const candidate = `load-${id}-${step++}-${Math.random().toString(36).slice(2, 8)}@example.com`
              const outcome = await boundedFetch(base, "/signup", { body: { email: candidate, password: PASSWORD } })
              record("signup", outcome)
              take(outcome)
              // A sign-up whose answer was lost may or may not have committed: the client starts over with another
              // address, as a user would after an error page.
              if (outcome._tag === "Answer" && outcome.status === 200) email = candidate
              else await sleep(20)
              continue
            }
            const turn = step++ % 4
            if (session === undefined || turn === 3) {
              const outcome = await boundedFetch(base, "/token?grant_type=password", { body: { email, password: PASSWORD } })
              record("password", outcome)
              take(outcome)
            } else if (turn === 0 || turn === 1) {
              const outcome = await boundedFetch(base, "/token?grant_type=refresh_token", { body: { refresh_token: session.refresh } })
              record("refresh", outcome)
              take(outcome)
              if (outcome._tag === "Answer" && outcome.status === 400) session = undefined
            } else {
              const outcome = await boundedFetch(base, "/user", { bearer: session.access })
              record("user", outcome)
              if (outcome._tag === "Answer" && outcome.status === 403) session = undefined
            }
            if (outcome503(observed)) await sleep(20)
          }
        }

        const clients = Array.from({ length: 6 }, (_, i) => client(i))
        yield* Effect.promise(() => sleep(1_000))
        const cutAt = Date.now()
        outage.cut()
        yield* Effect.promise(() => sleep(1_500))
        const restoredAt = Date.now()
        outage.restore()
        // Time to recover: from the restore to the first answer that needed the database (health asks it).
        let recoveredAt: number | undefined
        while (recoveredAt === undefined && Date.now() - restoredAt < 20_000) {
          const probe = yield* Effect.promise(() => boundedFetch(base, "/health", { boundMs: 5_000 }))
          if (probe._tag === "Answer" && probe.status === 200) recoveredAt = Date.now()
          else yield* Effect.promise(() => sleep(25))
        }
        yield* Effect.promise(() => sleep(1_500))
        stop = true
        yield* Effect.promise(() => Promise.all(clients))

        expect(bad).toStrictEqual([])
        expect(recoveredAt).toBeDefined()
        const endOf = (o: Observed) => o.outcome.startedAt + o.outcome.ms
        // Before the cut everything worked; the cut was felt (503s); once recovered, it is as if nothing happened.
        const beforeCut = observed.filter((o) => endOf(o) < cutAt)
        expect(beforeCut.length).toBeGreaterThan(0)
        expect(beforeCut.filter((o) => o.outcome._tag !== "Answer" || o.outcome.status !== 200)).toStrictEqual([])
        const unavailable = observed.filter((o) => errorCode(o.outcome) === "database_unavailable")
        expect(unavailable.length).toBeGreaterThan(0)
        const settled = observed.filter((o) => o.outcome.startedAt > recoveredAt! + 500)
        expect(settled.length).toBeGreaterThan(0)
        expect(settled.filter((o) => errorCode(o.outcome) === "database_unavailable")).toStrictEqual([])
        expect(settled.filter((o) => o.kind !== "user" && o.outcome._tag === "Answer" && o.outcome.status === 200).length)
          .toBeGreaterThan(0)

        // The tables, read straight from the database (not through the proxy).
        const t = authTables(namespace)
        const violations = yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const found: Record<string, number> = {}
          for (const [check, query] of Object.entries(consistencyChecks(t))) {
            const [row] = yield* query(sql)
            found[check] = Number((row as { n: number }).n)
          }
          const [users] = yield* sql`SELECT count(*)::int AS n FROM ${sql(t.users)}`
          const [tokens] = yield* sql`SELECT count(*)::int AS n FROM ${sql(t.refresh_tokens)}`
          return { found, users: Number((users as { n: number }).n), tokens: Number((tokens as { n: number }).n) }
        }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(outage.directUrl), maxConnections: 1 })), Effect.orDie)
        const inconsistencies = Object.values(violations.found).reduce((a, b) => a + b, 0)

        const byAnswer: Record<string, number> = {}
        for (const { outcome } of observed) {
          const key = outcome._tag === "Answer" ? `${outcome.status}${errorCode(outcome) === undefined ? "" : ` ${errorCode(outcome)}`}` : outcome.reason
          byAnswer[key] = (byAnswer[key] ?? 0) + 1
        }
        process.stdout.write(`${name}: answers ${JSON.stringify(byAnswer)}\n`)
        recordFigure(name, "requests", observed.length)
        recordFigure(name, "faults", 1)
        recordFigure(name, "inconsistencies", inconsistencies)
        recordFigure(name, "recovery_ms", recoveredAt! - restoredAt)
        expect(violations.users).toBeGreaterThan(0)
        expect(violations.tokens).toBeGreaterThan(violations.users)
        expect(violations.found).toStrictEqual(Object.fromEntries(Object.keys(violations.found).map((k) => [k, 0])))

        // The checks can fail: a token-less session and a second live token in another session are both seen.
        const caught = yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const [someone] = yield* sql<{ id: string }>`SELECT id::text AS id FROM ${sql(t.users)} LIMIT 1`
          yield* sql`INSERT INTO ${sql(t.sessions)} (id, user_id) VALUES (gen_random_uuid(), ${someone!.id}::uuid)`
          yield* sql`INSERT INTO ${sql(t.refresh_tokens)} (token, user_id, revoked, session_id)
            SELECT 'corrupt-' || id, user_id, false, session_id FROM ${sql(t.refresh_tokens)} WHERE revoked = false LIMIT 1`
          const found: Record<string, number> = {}
          for (const [check, query] of Object.entries(consistencyChecks(t))) {
            const [row] = yield* query(sql)
            found[check] = Number((row as { n: number }).n)
          }
          return found
        }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(outage.directUrl), maxConnections: 1 })), Effect.orDie)
        expect(caught["session without exactly one root refresh token"]).toBe(2)
        expect(caught["session with more than one unrevoked refresh token"]).toBe(1)
      }))
  })
})

/** Whether the last answer was a 503: a client backs off a little instead of spinning on a dead database. */
const outcome503 = (observed: ReadonlyArray<Observed>): boolean => {
  const last = observed.at(-1)
  return last !== undefined && last.outcome._tag === "Answer" && last.outcome.status === 503
}

// ---------------------------------------------------------------------------------------------------------------
// 2. SMTP goes down

/** A real SMTP server on 127.0.0.1 that a test can stop and start again on the same port. */
const restartableSmtp = Effect.gen(function*() {
  const received = yield* Queue.unbounded<ParsedMail>()
  let server: SMTPServer | undefined
  let port = 0
  const start = () =>
    new Promise<void>((resolve) => {
      server = new SMTPServer({
        authOptional: true,
        disabledCommands: ["STARTTLS"],
        logger: false,
        // Stopping drops the mailer's pooled connections at once, as a crashed server would (not after 30 s).
        closeTimeout: 50,
        onData(stream, _session, callback) {
          simpleParser(stream).then((mail) => {
            Queue.unsafeOffer(received, mail)
            callback()
          }, (error: Error) => callback(error))
        }
      })
      server.listen(port, "127.0.0.1", () => {
        port = (server!.server.address() as AddressInfo).port
        resolve()
      })
    })
  const stop = () =>
    new Promise<void>((resolve) => {
      const current = server
      server = undefined
      if (current === undefined) return resolve()
      current.close(() => resolve())
    })
  yield* Effect.acquireRelease(Effect.promise(start), () => Effect.promise(stop))
  return { port: () => port, start, stop, received }
})

class Smtp extends Context.Tag("test/Faults/Smtp")<Smtp, {
  readonly url: string
  readonly port: number
  readonly start: () => Promise<void>
  readonly stop: () => Promise<void>
  readonly received: Queue.Dequeue<ParsedMail>
}>() {}

/** A server with its production messaging (SmtpMailer) over an SMTP server the test can stop. */
const OverSmtp = Layer.unwrapScoped(Effect.gen(function*() {
  const smtp = yield* restartableSmtp
  const config = testConfig({
    AUTH_SMTP_HOST: "127.0.0.1",
    AUTH_SMTP_PORT: String(smtp.port()),
    AUTH_SMTP_ADMIN_EMAIL: "no-reply@gatehouse.test"
  })
  const Handle = Layer.effect(Smtp, Effect.map(HttpServer.HttpServer, (server) => ({
    url: `http://127.0.0.1:${(server.address as HttpServer.TcpAddress).port}`,
    port: smtp.port(),
    start: smtp.start,
    stop: smtp.stop,
    received: smtp.received
  })))
  return Layer.mergeAll(AuthRoutesLive(config), Handle).pipe(
    Layer.provide(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 })),
    Layer.provide(Layer.mergeAll(Layer.orDie(tokenSignerFor(config)), PasswordHasherTest, messagingFor(config), SecureRandom.Live, captchaFor(config))),
    Layer.provide(outboxFor(config)),
    Layer.provide(configLayer(config)),
    Layer.provide(Layer.effectDiscard(Effect.orDie(migrate({ namespace: config.db.namespace })))),
    Layer.provide(TestDatabase),
    Layer.orDie
  )
})).pipe(Layer.provide(quiet))

/** The six-digit code of a mail (the built-in bodies show it). */
const codeIn = (mail: ParsedMail): string => {
  const match = /\b(\d{6})\b/.exec(mail.text ?? String(mail.html))
  if (match === null) throw new Error(`no code in mail: ${mail.text}`)
  return match[1]!
}

const nextMail = (received: Queue.Dequeue<ParsedMail>) =>
  Queue.take(received).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("no mail arrived") }), Effect.orDie)

/** What an answer must never show: where the mail server is, how the connection failed, the user's password. */
const expectNoSecret = (outcome: Outcome, secrets: ReadonlyArray<string>) => {
  if (outcome._tag !== "Answer") throw new Error(`no answer: ${outcome.reason}`)
  for (const secret of secrets) expect(outcome.text).not.toContain(secret)
}

layer(OverSmtp, { timeout: 60_000, excludeTestServices: true })("faults: SMTP goes down", (it) => {
  it.effect("sign-up and recover answer at once (their mail goes after the answer), leave nothing half-done, and work again once SMTP is back", () =>
    Effect.gen(function*() {
      const smtp = yield* Smtp
      const name = "smtp down"
      let requests = 0
      const send = (path: string, body: unknown, bearer?: string) => {
        requests++
        return Effect.promise(() => boundedFetch(smtp.url, path, { body, ...(bearer === undefined ? {} : { bearer }) }))
      }
      const user = (email: string) =>
        Effect.map(
          Effect.promise(() => boundedFetch(smtp.url, `/admin/users?filter=${encodeURIComponent(email)}`, { bearer: adminJwt() })),
          (o) => (o._tag === "Answer" ? (o.json?.["users"] as Array<Record<string, unknown>>) : []).filter((u) => u["email"] === email)
        )
      /** Asks until the answer is not a 429: a mail that failed after the answer gives its window back then. */
      const once = (path: string, body: unknown) =>
        send(path, body).pipe(
          Effect.flatMap((o) => o._tag === "Answer" && o.status === 429 ? Effect.fail("window still closed") : Effect.succeed(o)),
          Effect.retry(Schedule.spaced("50 millis")),
          Effect.timeout("10 seconds"),
          Effect.orDie
        )

      // With SMTP up, the set-up works: a sign-up sends its mail.
      const first = yield* send("/signup", { email: uniqueEmail("smtp-up"), password: PASSWORD })
      expect(first).toMatchObject({ _tag: "Answer", status: 200 })
      yield* nextMail(smtp.received)

      // A confirmed user, made by the admin API (which sends nothing), for the recovery.
      const recovering = uniqueEmail("smtp-recover")
      const created = yield* send("/admin/users", { email: recovering, password: PASSWORD, email_confirm: true }, adminJwt())
      expect(created).toMatchObject({ _tag: "Answer", status: 200 })

      yield* Effect.promise(smtp.stop)
      // No "smtp" in the address: the answer carries it, and must carry nothing about the mail server.
      const email = uniqueEmail("mail-down")
      const signup = yield* send("/signup", { email, password: PASSWORD })
      // GoTrue answers 500 "Error sending confirmation email"; here the answer never waits for the mail server, so
      // it cannot tell (by its status or its time) which addresses have accounts.
      expect(signup).toMatchObject({ _tag: "Answer", status: 200, json: { email } })
      expectNoSecret(signup, [String(smtp.port), "127.0.0.1", "ECONN", PASSWORD, "smtp", "SMTP"])
      const recover = yield* send("/recover", { email: recovering })
      expect(recover).toMatchObject({ _tag: "Answer", status: 200, json: {} })
      expectNoSecret(recover, [String(smtp.port), "127.0.0.1", "ECONN", "smtp", "SMTP"])

      yield* Effect.promise(smtp.start)
      // The same sign-up again: no "already registered", and once the failed mail gave its window back (at once),
      // no "wait 60 seconds"; its mail arrives and confirms.
      const again = yield* once("/signup", { email, password: PASSWORD })
      expect(again).toMatchObject({ _tag: "Answer", status: 200 })
      const confirmation = yield* nextMail(smtp.received)
      expect(confirmation.to).toMatchObject({ text: email })
      const verified = yield* send("/verify", { type: "signup", email, token: codeIn(confirmation) })
      expect(verified).toMatchObject({ _tag: "Answer", status: 200 })
      expect(typeof (verified as { json?: Record<string, unknown> }).json?.["access_token"]).toBe("string")
      // The recovery too: the failed attempt gave its max-frequency window back.
      const recoverAgain = yield* once("/recover", { email: recovering })
      expect(recoverAgain).toMatchObject({ _tag: "Answer", status: 200 })
      const recoveryMail = yield* nextMail(smtp.received)
      const recovered = yield* send("/verify", { type: "recovery", email: recovering, token: codeIn(recoveryMail) })
      expect(recovered).toMatchObject({ _tag: "Answer", status: 200 })

      recordFigure(name, "requests", requests)
      recordFigure(name, "faults", 1)
      recordFigure(name, "inconsistencies", (yield* user(email)).length === 1 ? 0 : 1)
    }))
})

// ---------------------------------------------------------------------------------------------------------------
// 3. The SMS and captcha providers stop answering

class Stubbed extends Context.Tag("test/Faults/Stubbed")<Stubbed, {
  readonly url: string
  readonly setAnswer: (answer: StubAnswer) => void
}>() {}

const TWILIO_TOKEN = "twilio-auth-token-never-shown"

/** A server whose texts go through the real Twilio sender to a local stand-in that can hang, with a 1 s timeout. */
const OverHangingSms = Layer.unwrapScoped(Effect.gen(function*() {
  let answer: StubAnswer = "hang"
  const stub = yield* startHttpStub(() => answer)
  const config = testConfig({ AUTH_EXTERNAL_PHONE_ENABLED: "true" })
  const sms = TwilioSmsSender({
    accountSid: "AC0123456789",
    authToken: Redacted.make(TWILIO_TOKEN),
    messageServiceSid: "MG0123456789",
    baseUrl: stub.baseUrl,
    timeout: "1 second"
  }).pipe(Layer.provide(FetchHttpClient.layer))
  const Handle = Layer.effect(Stubbed, Effect.map(HttpServer.HttpServer, (server) => ({
    url: `http://127.0.0.1:${(server.address as HttpServer.TcpAddress).port}`,
    setAnswer: (next: StubAnswer) => void (answer = next)
  })))
  return Layer.mergeAll(AuthRoutesLive(config), Handle).pipe(
    Layer.provide(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 })),
    Layer.provide(Layer.mergeAll(Layer.orDie(tokenSignerFor(config)), PasswordHasherTest, MemoryMailer, sms, SecureRandom.Live, captchaFor(config))),
    Layer.provide(outboxFor(config)),
    Layer.provide(configLayer(config)),
    Layer.provide(Layer.effectDiscard(Effect.orDie(migrate({ namespace: config.db.namespace })))),
    Layer.provide(TestDatabase),
    Layer.orDie
  )
})).pipe(Layer.provide(quiet))

/** Fires `hanging` requests and, while they wait on the provider, checks the server still answers others. */
const servesWhileHanging = (url: string, hanging: () => Promise<Outcome>, count: number) =>
  Effect.promise(async () => {
    let pending = count
    const slow = Array.from({ length: count }, () => hanging().finally(() => pending--))
    await sleep(100)
    const health = await boundedFetch(url, "/health", { boundMs: 5_000 })
    const settings = await boundedFetch(url, "/settings", { boundMs: 5_000 })
    const stillPending = pending
    return { slow: await Promise.all(slow), health, settings, stillPending }
  })

layer(OverHangingSms, { timeout: 60_000, excludeTestServices: true })("faults: the SMS provider does not answer", (it) => {
  it.effect("each OTP request gets 422 sms_send_failed at the provider timeout, the server serves others meanwhile, and a retry works", () =>
    Effect.gen(function*() {
      const { setAnswer, url } = yield* Stubbed
      const name = "sms provider hangs"
      const phones = Array.from({ length: 4 }, uniquePhone)
      let i = 0
      const { health, settings, slow, stillPending } = yield* servesWhileHanging(
        url,
        () => boundedFetch(url, "/otp", { body: { phone: phones[i++]! }, boundMs: 8_000 }),
        phones.length
      )
      expect(health).toMatchObject({ _tag: "Answer", status: 200 })
      expect(settings).toMatchObject({ _tag: "Answer", status: 200 })
      expect(stillPending).toBeGreaterThan(0)
      for (const answer of slow) {
        expect(answer).toMatchObject({
          _tag: "Answer",
          status: 422,
          json: { code: 422, error_code: "sms_send_failed", msg: "Error sending SMS: no answer within 1s" }
        })
        expectNoSecret(answer, [TWILIO_TOKEN, "AC0123456789", "127.0.0.1"])
      }

      // The provider answers again: the same number gets its code at once (the failure started no max-frequency
      // clock) and the code signs in.
      setAnswer({ status: 201, json: { sid: "SM0123456789", status: "queued" } })
      const retry = yield* Effect.promise(() => boundedFetch(url, "/otp", { body: { phone: phones[0]! } }))
      expect(retry).toMatchObject({ _tag: "Answer", status: 200 })

      recordFigure(name, "requests", phones.length + 3)
      recordFigure(name, "faults", phones.length)
    }))
})

const CAPTCHA_SECRET = "captcha-site-secret-never-shown"

const OverHangingCaptcha = Layer.unwrapScoped(Effect.gen(function*() {
  const stub = yield* startHttpStub(() => "hang")
  const server = TestServer({
    AUTH_SECURITY_CAPTCHA_ENABLED: "true",
    AUTH_SECURITY_CAPTCHA_PROVIDER: "hcaptcha",
    AUTH_SECURITY_CAPTCHA_SECRET: CAPTCHA_SECRET,
    AUTH_SECURITY_CAPTCHA_TIMEOUT: "1s",
    AUTH_SECURITY_CAPTCHA_VERIFY_URL: `${stub.baseUrl}/siteverify`
  })
  return Layer.effect(Stubbed, Effect.map(ServerUrl, (url) => ({ url, setAnswer: () => undefined }))).pipe(Layer.provideMerge(server))
})).pipe(Layer.provide(quiet))

layer(OverHangingCaptcha, { timeout: 60_000, excludeTestServices: true })("faults: the captcha provider does not answer", (it) => {
  it.effect("each sign-up gets 503 captcha_failed at the captcha timeout, creates no user, and the server serves others meanwhile", () =>
    Effect.gen(function*() {
      const { url } = yield* Stubbed
      const name = "captcha provider hangs"
      const emails = Array.from({ length: 4 }, () => uniqueEmail("captcha-hang"))
      let i = 0
      const { health, settings, slow, stillPending } = yield* servesWhileHanging(
        url,
        () =>
          boundedFetch(url, "/signup", {
            body: { email: emails[i++]!, password: PASSWORD, gotrue_meta_security: { captcha_token: "a-token" } },
            boundMs: 8_000
          }),
        emails.length
      )
      expect(health).toMatchObject({ _tag: "Answer", status: 200 })
      expect(settings).toMatchObject({ _tag: "Answer", status: 200 })
      expect(stillPending).toBeGreaterThan(0)
      for (const answer of slow) {
        expect(answer).toMatchObject({ _tag: "Answer", status: 503, json: { code: 503, error_code: "captcha_failed" } })
        expectNoSecret(answer, [CAPTCHA_SECRET, "127.0.0.1", PASSWORD])
      }
      for (const email of emails) {
        const listed = yield* Effect.promise(() =>
          boundedFetch(url, `/admin/users?filter=${encodeURIComponent(email)}`, { bearer: adminJwt() }))
        expect(listed).toMatchObject({ _tag: "Answer", status: 200, json: { users: [] } })
      }
      recordFigure(name, "requests", emails.length * 2 + 2)
      recordFigure(name, "faults", emails.length)
    }))
})

// ---------------------------------------------------------------------------------------------------------------
// 4. SIGTERM during load, on the built program

const MAIN = fileURLToPath(new URL("../../dist/main.js", import.meta.url))
const SECRET = "faults-test-jwt-secret-0123456789-abcdefghij"

/** One request on its own connection (no keep-alive), and how it ended. */
type Ending =
  | { readonly _tag: "Answered"; readonly status: number; readonly body: string; readonly startedAt: number; readonly endedAt: number }
  | { readonly _tag: "Refused"; readonly startedAt: number }
  /** The connection broke: `bytes` of the answer had arrived. */
  | { readonly _tag: "Broken"; readonly code: string; readonly bytes: number; readonly startedAt: number }

const oneShot = (url: string, path: string, body?: unknown): Promise<Ending> =>
  new Promise((resolve) => {
    const startedAt = Date.now()
    const payload = body === undefined ? undefined : JSON.stringify(body)
    let bytes = 0
    const req = httpRequest(`${url}${path}`, {
      method: payload === undefined ? "GET" : "POST",
      agent: false,
      headers: payload === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
      signal: AbortSignal.timeout(10_000)
    }, (res) => {
      let text = ""
      res.on("data", (chunk: Buffer) => {
        bytes += chunk.length
        text += chunk
      })
      res.on("end", () => resolve({ _tag: "Answered", status: res.statusCode ?? 0, body: text, startedAt, endedAt: Date.now() }))
      res.on("error", (error: NodeJS.ErrnoException) =>
        resolve({ _tag: "Broken", code: error.code ?? error.name, bytes, startedAt }))
    })
    req.on("error", (error: NodeJS.ErrnoException) =>
      resolve(error.code === "ECONNREFUSED" ? { _tag: "Refused", startedAt } : { _tag: "Broken", code: error.code ?? error.name, bytes, startedAt }))
    if (payload !== undefined) req.write(payload)
    req.end()
  })

describe("faults: SIGTERM during load", () => {
  let scope: Scope.CloseableScope
  let databaseUrl: Option.Option<string> = Option.none()
  const dirs: Array<string> = []

  it("requests in flight are answered, new connections are refused (never cut mid-answer), and the process stops with 0", async () => {
    if (!existsSync(MAIN)) throw new Error("dist/main.js is missing: run `npm run build` (npm test does)")
    scope = Effect.runSync(Scope.make())
    try {
      if (Option.isSome(externalDatabaseUrl)) {
        const fresh = await Effect.runPromise(Scope.extend(freshDatabaseUrl(externalDatabaseUrl.value), scope))
        databaseUrl = Option.some(fresh.url)
      }
      const dir = mkdtempSync(join(tmpdir(), "gatehouse-faults-"))
      dirs.push(dir)
      const env: Record<string, string> = {
        PATH: process.env["PATH"] ?? "",
        HOME: process.env["HOME"] ?? "",
        PORT: "0",
        API_HOST: "127.0.0.1",
        AUTH_IAM_GRPC_PORT: "0",
        AUTH_JWT_SECRET: SECRET,
        AUTH_MAILER_AUTOCONFIRM: "true",
        LOG_LEVEL: "info",
        ...Option.match(databaseUrl, {
          onNone: () => ({ AUTH_DATA_DIR: join(dir, "data") }),
          onSome: (url) => ({
            DATABASE_URL: url,
            AUTH_DB_DRIVER: "postgres",
            AUTH_SITE_URL: "http://localhost:3000",
            API_EXTERNAL_URL: "http://localhost:9999",
            AUTH_SMTP_ADMIN_EMAIL: "admin@example.com",
            AUTH_SMTP_HOST: "127.0.0.1",
            AUTH_SMTP_PORT: "2525",
            AUTH_IAM_ENABLED: "false",
            // Several processes (node:cluster), whatever the machine's cores: the shutdown that has races.
            AUTH_WORKERS: "2",
            DB_NAMESPACE: `faults_${Math.random().toString(36).slice(2, 8)}`
          })
        })
      }
      const child: ChildProcess = spawn(process.execPath, [MAIN], { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] })
      let stdout = ""
      let stderr = ""
      child.stdout!.on("data", (d) => (stdout += d))
      child.stderr!.on("data", (d) => (stderr += d))
      const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)))
      const killer = setTimeout(() => child.kill("SIGKILL"), 45_000)
      const url = await new Promise<string>((resolve, reject) => {
        const look = () => {
          const match = /Listening on (http:\/\/[\d.]+:\d+)/.exec(stdout)
          if (match) resolve(match[1]!)
        }
        child.stdout!.on("data", look)
        child.on("close", () => reject(new Error(`exited before listening: ${stdout}${stderr}`)))
      })

      const endings: Array<{ readonly kind: "signup" | "settings"; readonly ending: Ending }> = []
      let exitedYet = false
      void exited.then(() => (exitedYet = true))
      /** A client that keeps going until the server is gone, each request on a new connection. */
      const client = async (id: number) => {
        for (let n = 0; !exitedYet && n < 2_000; n++) {
          const kind = n % 2 === 0 ? "signup" : "settings"
          const ending = kind === "signup"
            ? await oneShot(url, "/signup", { email: `term-${id}-${n}-${Math.random().toString(36).slice(2, 6)}@example.com`, password: PASSWORD })
            : await oneShot(url, "/settings")
          endings.push({ kind, ending })
          if (ending._tag === "Refused") return
        }
      }
      const clients = Array.from({ length: 8 }, (_, i) => client(i))
      // Load first; then SIGTERM while requests are in flight.
      while (endings.filter((e) => e.ending._tag === "Answered").length < 40) await sleep(20)
      const termAt = Date.now()
      child.kill("SIGTERM")
      const code = await exited
      clearTimeout(killer)
      await Promise.all(clients)
      const after = await oneShot(url, "/settings")

      const answered = endings.filter((e) => e.ending._tag === "Answered")
      const inFlight = answered.filter((e) => e.ending.startedAt < termAt && (e.ending as { endedAt: number }).endedAt >= termAt)
      const refused = endings.filter((e) => e.ending._tag === "Refused")
      // Flat, so that a failure shows each one whole: what broke, how, how many bytes had come, when (ms after SIGTERM).
      const broken = endings.flatMap(({ ending, kind }) =>
        ending._tag === "Broken" ? [{ kind, code: ending.code, bytes: ending.bytes, sinceSigterm: ending.startedAt - termAt }] : [])
      recordFigure("sigterm during load", "requests", endings.length + 1)
      recordFigure("sigterm during load", "faults", 1)

      // Every answer is a real, whole one: the sign-ups issued sessions, /settings its JSON. A request that arrived
      // after SIGTERM, once the app was detached but before the port closed, gets a 503 (EarlyRequests.ts).
      // "Before the signal" with a margin: a request sent just before kill() can reach the server after it.
      const SENT_AROUND_SIGTERM_MS = 100
      const stopping = answered.filter((e) => (e.ending as { status: number }).status === 503)
      expect(stopping.filter((e) => e.ending.startedAt < termAt - SENT_AROUND_SIGTERM_MS)).toStrictEqual([])
      for (const { ending, kind } of answered.filter((e) => !stopping.includes(e))) {
        const { body, status } = ending as { status: number; body: string }
        expect({ kind, status }).toStrictEqual({ kind, status: 200 })
        expect(() => JSON.parse(body)).not.toThrow()
        if (kind === "signup") expect(JSON.parse(body)).toHaveProperty("access_token")
      }
      // Some requests were in flight when SIGTERM arrived, and were answered.
      expect(inFlight.length).toBeGreaterThan(0)
      // Nothing hung, and no connection broke after part of an answer had arrived. A connection can be reset before
      // any byte: one the cluster's primary accepted after SIGTERM and handed to a worker already stopping (a
      // node:cluster race; see Workers.ts), never one sent before the signal.
      expect(broken.filter((e) => e.code === "ABORT_ERR")).toStrictEqual([])
      expect(broken.filter((e) => e.bytes > 0)).toStrictEqual([])
      expect(broken.filter((e) => e.sinceSigterm < -SENT_AROUND_SIGTERM_MS)).toStrictEqual([])
      expect(refused.length).toBeGreaterThan(0)
      expect(after._tag).toBe("Refused")
      expect(code).toBe(0)
      // Each process says it stopped; the primary (or the single process) too, which has no worker field.
      const stoppedLines = stdout.split("\n").filter((l) => l.includes(`"msg":"stopped: requests in flight answered, connections closed"`))
      expect(stoppedLines.filter((l) => !l.includes(`"worker"`))).toHaveLength(1)
      expect(stdout + stderr).not.toContain(SECRET)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)
})
