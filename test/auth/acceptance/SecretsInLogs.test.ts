/**
 * A full session's worth of traffic, good and bad, with every log line the server writes captured at every level
 * (in the production JSON format): no password, access token, refresh token or JWT secret may appear in any of them.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel, Redacted } from "effect"
import { AppConfig } from "../../../src/config/AppConfig.js"
import { formatLogLine } from "../../../src/platform/Logging.js"
import { ServerUrl, TestServer } from "../../support/TestServer.js"
import { authClient, call, raw, signHs256, uniqueEmail, withPayload } from "./AcceptanceKit.js"

const lines: Array<string> = []

const CaptureLogs = Layer.merge(
  Logger.replace(Logger.defaultLogger, Logger.make((options) => void lines.push(formatLogLine(options)))),
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
      const jwtSecret = Redacted.value((yield* AppConfig).jwt.secret)
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
