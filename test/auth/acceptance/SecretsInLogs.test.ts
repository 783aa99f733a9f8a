/**
 * A full session's worth of traffic, good and bad, with every log line the server writes captured at every level
 * (in both formats, JSON and a terminal's): no password, access token, refresh token or JWT secret may appear in any
 * of them. Nor, in the embedded default, any code or link the outbox keeps: that is where a developer reads them.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel, Redacted, Schedule } from "effect"
import { AuthConfig } from "../../../src/config/AuthConfig.js"
import { formatLogLine, formatPrettyLine } from "../../../src/platform/Logging.js"
import { ServerUrl, TestServer } from "../../support/TestServer.js"
import { adminJwt, authClient, call, PASSWORD as USER_PASSWORD, raw, signHs256, uniqueEmail, uniquePhone, withPayload } from "./AcceptanceKit.js"

const lines: Array<string> = []

const CaptureLogs = Layer.merge(
  Logger.replace(Logger.defaultLogger, Logger.make((options) => void lines.push(formatLogLine(options), formatPrettyLine(options)))),
  Logger.minimumLogLevel(LogLevel.All)
)

const PASSWORD = "Log-Secret-Passw0rd-A"
const NEW_PASSWORD = "Log-Secret-Passw0rd-B"
const WRONG_PASSWORD = "Log-Secret-Passw0rd-Wrong"
const WEAK_PASSWORD = "weak-pw-in-log"
const LONG_PASSWORD = `Log-Secret-Long-${"p".repeat(90)}`

layer(TestServer({ AUTH_MAILER_AUTOCONFIRM: "true", AUTH_PASSWORD_MIN_LENGTH: "16" }).pipe(Layer.provide(CaptureLogs)), {
  timeout: 120_000,
  excludeTestServices: true
})("secrets never reach a log line", (it) => {
  it.effect("sign-up, sign-in, refresh, updates, failures and logout log no password, token or secret", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const jwtSecret = Redacted.value((yield* AuthConfig).jwt.secret)
      const email = uniqueEmail("logs")
      const tokens: Array<string> = []
      const { client } = authClient(url)

      const signUp = yield* call(() => client.signUp({ email, password: PASSWORD, options: { data: { hobby: "logs" } } }))
      expect(signUp.error).toBeNull()
      tokens.push(signUp.data.session!.access_token, signUp.data.session!.refresh_token)
      const signIn = yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))
      expect(signIn.error).toBeNull()
      tokens.push(signIn.data.session!.access_token, signIn.data.session!.refresh_token)
      const refreshed = yield* call(() => client.refreshSession())
      expect(refreshed.error).toBeNull()
      tokens.push(refreshed.data.session!.access_token, refreshed.data.session!.refresh_token)
      expect((yield* call(() => client.getUser())).error).toBeNull()
      expect((yield* call(() => client.updateUser({ data: { hobby: null } }))).error).toBeNull()
      expect((yield* call(() => client.updateUser({ password: NEW_PASSWORD }))).error).toBeNull()
      const again = yield* call(() => client.signInWithPassword({ email, password: NEW_PASSWORD }))
      tokens.push(again.data.session!.access_token, again.data.session!.refresh_token)

      // The failures, where a careless server would log the request it refused.
      expect((yield* call(() => authClient(url).client.signInWithPassword({ email, password: WRONG_PASSWORD }))).error).not.toBeNull()
      expect((yield* call(() => authClient(url).client.signUp({ email: uniqueEmail("weak"), password: WEAK_PASSWORD }))).error)
        .not.toBeNull()
      expect((yield* raw(url, "/signup", { body: { email: uniqueEmail("long"), password: LONG_PASSWORD } })).status).toBe(400)
      expect((yield* raw(url, "/signup", { body: `{"email":"${email}","password":"${WRONG_PASSWORD}` })).status).toBe(400)
      expect((yield* raw(url, "/token?grant_type=password", { body: { email, password: 12345, note: WRONG_PASSWORD } })).status)
        .toBe(400)
      const reused = yield* call(() => authClient(url).client.refreshSession({ refresh_token: signUp.data.session!.refresh_token }))
      expect(reused.error).not.toBeNull()
      const forged = withPayload(again.data.session!.access_token, { sub: "x", role: "service_role" })
      const wrongKey = signHs256({ sub: "x", exp: 9_999_999_999 }, `${jwtSecret}-but-not-quite`)
      tokens.push(forged, wrongKey)
      expect((yield* raw(url, "/user", { bearer: forged })).status).toBe(403)
      expect((yield* raw(url, "/user", { bearer: wrongKey })).status).toBe(403)
      expect((yield* raw(url, `/user?access_token=${again.data.session!.access_token}`)).status).toBe(401)

      // A database failure mid-request: the 500 path logs the whole cause, which must not carry the request's secrets.
      const sql = yield* SqlClient.SqlClient
      yield* sql`ALTER TABLE auth.sessions RENAME TO sessions_unavailable`
      const broken = yield* Effect.all([
        raw(url, "/token?grant_type=password", { body: { email, password: NEW_PASSWORD } }),
        raw(url, "/token?grant_type=refresh_token", { body: { refresh_token: again.data.session!.refresh_token } }),
        raw(url, "/user", { bearer: again.data.session!.access_token })
      ]).pipe(Effect.ensuring(sql`ALTER TABLE auth.sessions_unavailable RENAME TO sessions`.pipe(Effect.orDie)))
      for (const response of broken) {
        expect(response.status).toBe(500)
        expect(response.json).toEqual({
          code: 500,
          error_code: "unexpected_failure",
          msg: "Unexpected failure, please check server logs for more information",
          error_id: expect.any(String)
        })
      }
      expect(lines.filter((line) => line.includes("\"level\":\"error\"")).length).toBeGreaterThanOrEqual(3)

      expect((yield* call(() => client.signOut())).error).toBeNull()
      expect((yield* raw(url, "/user", { bearer: again.data.session!.access_token })).status).toBe(403)
      expect((yield* raw(url, "/logout", { method: "POST", bearer: refreshed.data.session!.access_token })).status).toBe(403)

      // The capture really saw the traffic: one access line per request, at least.
      expect(lines.filter((line) => line.includes("\"msg\":\"request\"")).length).toBeGreaterThanOrEqual(18)
      expect(lines.some((line) => line.includes("\"path\":\"/token\""))).toBe(true)

      const secrets = [PASSWORD, NEW_PASSWORD, WRONG_PASSWORD, WEAK_PASSWORD, LONG_PASSWORD, jwtSecret, ...tokens]
      // A JWT's signature alone is enough to replay it, and its payload is the user's data: check the parts too.
      const parts = tokens.filter((token) => token.split(".").length === 3).flatMap((token) => token.split(".").filter((p) => p.length > 20))
      for (const line of lines) {
        for (const secret of [...secrets, ...parts]) expect(line).not.toContain(secret)
      }
    }))
})

interface Kept {
  readonly type: string
  readonly to: string
  readonly code: string
  readonly link: string | null
}

/** The outbox's messages once there are at least `count`: posted mails are kept just after the answer. */
const outboxOf = (url: string, count: number) =>
  raw(url, "/_outbox.json").pipe(
    Effect.map((response) => response.json.messages as ReadonlyArray<Kept>),
    Effect.filterOrFail((messages) => messages.length >= count, () => "not yet"),
    Effect.retry(Schedule.spaced("10 millis")),
    Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error(`fewer than ${count} messages in the outbox`) }),
    Effect.orDie
  )

/** A code as it would show in a line: not inside a longer run of letters and digits (a request id's hex, say). */
const standalone = (code: string) => new RegExp(`(?<![0-9A-Za-z])${code}(?![0-9A-Za-z])`)

layer(
  TestServer({ AUTH_EXTERNAL_PHONE_ENABLED: "true", AUTH_SMTP_MAX_FREQUENCY: "0", AUTH_SMS_MAX_FREQUENCY: "0" }).pipe(Layer.provide(CaptureLogs)),
  { timeout: 120_000, excludeTestServices: true }
)("the embedded default's outbox keeps its codes out of the log", (it) => {
  it.effect("every kind of mail and text is logged as kept in the outbox, without its code, link or body", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      const email = uniqueEmail("outbox-logs")
      const before = lines.length

      expect((yield* call(() => client.signUp({ email, password: USER_PASSWORD }))).error).toBeNull()
      expect((yield* call(() => client.resend({ type: "signup", email }))).error).toBeNull()
      const [confirmation] = yield* outboxOf(url, 2)
      const verified = yield* call(() => client.verifyOtp({ email, token: confirmation!.code, type: "signup" }))
      expect(verified.error).toBeNull()
      const bearer = verified.data.session!.access_token
      expect((yield* call(() => client.signInWithOtp({ email }))).error).toBeNull()
      expect((yield* raw(url, "/reauthenticate", { bearer })).status).toBe(200)
      expect((yield* raw(url, "/user", { method: "PUT", bearer, body: { email: uniqueEmail("outbox-logs-new") } })).status).toBe(200)
      expect((yield* raw(url, "/invite", { body: { email: uniqueEmail("outbox-logs-invited") }, bearer: adminJwt() })).status).toBe(200)
      expect((yield* call(() => client.signUp({ phone: uniquePhone(), password: USER_PASSWORD }))).error).toBeNull()
      const kept = yield* outboxOf(url, 8)
      expect(new Set(kept.map((message) => message.type))).toEqual(
        new Set(["signup", "magiclink", "reauthentication", "email_change", "invite", "sms"])
      )

      const logged = lines.slice(before)
      const keptLines = logged.filter((line) => line.includes("\"msg\":\"mail not sent (no SMTP_HOST): kept in the outbox\""))
      expect(keptLines).toHaveLength(7)
      for (const line of keptLines) {
        expect(JSON.parse(line)).toMatchObject({ to: expect.any(String), subject: expect.any(String), type: expect.any(String), outbox: expect.stringMatching(/\/_outbox$/) })
      }
      expect(logged.filter((line) => line.includes("\"msg\":\"text not sent (no SMS provider): kept in the outbox\""))).toHaveLength(1)
      for (const line of logged) {
        expect(line).not.toContain("Your code is")
        expect(line).not.toContain("Code:")
        for (const message of kept) {
          expect(line).not.toMatch(standalone(message.code))
          if (message.link !== null) {
            expect(line).not.toContain(message.link)
            expect(line).not.toContain(new URL(message.link).searchParams.get("token")!)
          }
        }
      }
    }))
})
