/**
 * GoTrue configurations that enable phone sign-in without a usable SMS provider start, and fail only when a text
 * must really be sent; SMS_TEST_OTP numbers work with no provider at all.
 */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { Effect, Either, Ref } from "effect"
import { otpTokenHash } from "../../../src/auth/domain/OtpToken.js"
import { parseAppConfig } from "../../../src/config/AppConfig.js"
import { SentSms, SmsSender } from "../../../src/platform/sms/SmsSender.js"
import { smsSenderFor } from "../../../src/platform/PortsLive.js"
import { ServerUrl, SmsOutage } from "../../support/TestServer.js"
import { acceptance, expectingErrors, PASSWORD, raw, uniquePhone } from "./AcceptanceKit.js"

const TEST_NUMBER = "15550001111"
const TEST_CODE = "424242"

const productionEnv = {
  DATABASE_URL: "postgres://auth:pw@db.internal:5432/auth",
  AUTH_DB_DRIVER: "postgres",
  AUTH_SITE_URL: "https://app.example.com",
  API_EXTERNAL_URL: "https://auth.example.com",
  AUTH_JWT_SECRET: "production-secret-that-is-long-enough-0123456789",
  AUTH_SMTP_ADMIN_EMAIL: "no-reply@example.com",
  AUTH_SMTP_HOST: "smtp.example.com",
  AUTH_SMTP_PORT: "587",
  AUTH_EXTERNAL_PHONE_ENABLED: "true"
}

const sendWith = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const { config } = Either.getOrThrow(parseAppConfig(env))
    const sender = yield* Effect.provide(SmsSender, smsSenderFor(config))
    return yield* Effect.flip(sender.send({ to: "15551234567", body: "Your code is 123456" }))
  })

acceptance({ AUTH_EXTERNAL_PHONE_ENABLED: "true", AUTH_SMS_TEST_OTP: `+${TEST_NUMBER}:${TEST_CODE}` })(
  "phone sign-in without a usable SMS provider",
  (it) => {
    it.effect("in production, with no provider or an incomplete one, each send fails and says what is missing", () =>
      Effect.gen(function*() {
        expect((yield* sendWith(productionEnv)).message).toBe("no SMS provider is configured")
        expect((yield* sendWith({ ...productionEnv, AUTH_SMS_PROVIDER: "twilio", AUTH_SMS_TWILIO_ACCOUNT_SID: "AC1" })).message)
          .toBe("the twilio SMS provider is missing credentials")
      }))

    it.effect("a phone sign-up whose text cannot be sent is a 422 sms_send_failed and leaves no user behind", () =>
      expectingErrors(Effect.gen(function*() {
        const url = yield* ServerUrl
        const sql = yield* SqlClient.SqlClient
        const phone = uniquePhone()
        yield* Ref.set(yield* SmsOutage, true)
        const response = yield* raw(url, "/signup", { body: { phone, password: PASSWORD }, apiVersion: true }).pipe(
          Effect.ensuring(Effect.flatMap(SmsOutage, (outage) => Ref.set(outage, false)))
        )
        expect(response.status).toBe(422)
        expect(response.headers.get("x-sb-error-code")).toBe("sms_send_failed")
        expect(response.json).toEqual({ code: "sms_send_failed", message: "Error sending SMS: no SMS provider is configured" })
        const rows = yield* sql`SELECT 1 FROM auth.users WHERE phone = ${phone.slice(1)}`
        expect(rows).toHaveLength(0)
      })))

    it.effect("an SMS_TEST_OTP number signs up with no provider: nothing is sent and its fixed code is the one stored", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const sql = yield* SqlClient.SqlClient
        const { messages } = yield* SentSms
        const before = (yield* Ref.get(messages)).length
        yield* Ref.set(yield* SmsOutage, true)
        const response = yield* raw(url, "/signup", { body: { phone: `+${TEST_NUMBER}`, password: PASSWORD } }).pipe(
          Effect.ensuring(Effect.flatMap(SmsOutage, (outage) => Ref.set(outage, false)))
        )
        expect(response.status).toBe(200)
        expect(response.json).toMatchObject({ phone: TEST_NUMBER, confirmation_sent_at: expect.any(String) })
        expect((yield* Ref.get(messages)).length).toBe(before)
        const [row] = yield* sql<{ confirmation_token: string }>`SELECT confirmation_token FROM auth.users WHERE phone = ${TEST_NUMBER}`
        expect(row!.confirmation_token).toBe(otpTokenHash(TEST_NUMBER, TEST_CODE))
      }))
  }
)
