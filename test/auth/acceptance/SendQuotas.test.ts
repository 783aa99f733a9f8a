/**
 * RATE_LIMIT_EMAIL_SENT and RATE_LIMIT_SMS_SENT over HTTP: the instance-wide quotas refuse the message past the
 * limit with GoTrue's 429 and a Retry-After, never count a message that failed to go out or a test number's, and
 * hold across two server instances over one database.
 *
 * The windows are ten years long (aligned to the epoch, the current one runs to the end of 2029), so no test can
 * straddle a window's end, and nothing waits on a clock.
 */
import { expect } from "@effect/vitest"
import { Context, Effect, Layer, Ref } from "effect"
import { SentSms } from "../../../src/platform/sms/SmsSender.js"
import { MailOutage, ServerUrl, SmsOutage, TestServerOver } from "../../support/TestServer.js"
import {
  acceptance,
  expectingErrors,
  legacyError,
  mailTo,
  PASSWORD,
  raw,
  type RawResponse,
  refusals,
  refusedMailTo,
  settledMail,
  uniqueEmail,
  uniquePhone,
  versionedError
} from "./AcceptanceKit.js"

const TEN_YEARS_SECONDS = 87_600 * 3600
const TEST_NUMBER = "15550002222"

const textsTo = (phone: string) =>
  Effect.map(Effect.flatMap(SentSms, ({ messages }) => Ref.get(messages)), (all) => all.filter((sms) => sms.to === phone))

/** The Retry-After of a refused send: whole seconds, and no more than the window is long. */
const retryAfterOf = (response: RawResponse): number => {
  const value = response.headers.get("retry-after") ?? ""
  expect(value).toMatch(/^[1-9]\d*$/)
  expect(Number(value)).toBeLessThanOrEqual(TEN_YEARS_SECONDS)
  return Number(value)
}

const signUpEmail = (url: string, email: string, apiVersion = true) =>
  raw(url, "/signup", { body: { email, password: PASSWORD }, apiVersion })

const signUpPhone = (url: string, phone: string) => raw(url, "/signup", { body: { phone, password: PASSWORD }, apiVersion: true })

/** Runs `effect` with an outage switched on, and switches it off again whatever happens. */
const during = <A, E, R>(outage: Ref.Ref<boolean>, effect: Effect.Effect<A, E, R>) =>
  Effect.zipRight(Ref.set(outage, true), effect).pipe(Effect.ensuring(Ref.set(outage, false)))

acceptance({
  AUTH_EXTERNAL_PHONE_ENABLED: "true",
  AUTH_SMTP_MAX_FREQUENCY: "0",
  AUTH_SMS_MAX_FREQUENCY: "0",
  AUTH_RATE_LIMIT_EMAIL_SENT: "3/87600h",
  AUTH_RATE_LIMIT_SMS_SENT: "2/87600h",
  AUTH_SMS_TEST_OTP: `${TEST_NUMBER}:123456`
})("instance-wide send quotas", (it) => {
  it.effect("mail: a failed mail costs nothing; the quota'th+1 is refused 429 over_email_send_rate_limit with Retry-After", () =>
    expectingErrors(Effect.gen(function*() {
      const url = yield* ServerUrl
      const counted = yield* refusals("email_sent")
      const outageEmail = uniqueEmail("outage")
      const failed = yield* during(
        yield* MailOutage,
        Effect.zipLeft(signUpEmail(url, outageEmail), Effect.zipRight(refusedMailTo(outageEmail), settledMail))
      )
      // The confirmation goes after the answer; its failure gives the quota back there.
      expect(failed.status).toBe(200)

      const addresses = [uniqueEmail("q1"), uniqueEmail("q2"), uniqueEmail("q3")]
      for (const email of addresses) {
        expect((yield* signUpEmail(url, email)).status).toBe(200)
        expect(yield* mailTo(email)).toHaveLength(1)
      }

      const refusedEmail = uniqueEmail("q4")
      const refused = yield* signUpEmail(url, refusedEmail)
      expect([refused.status, refused.json]).toEqual([429, versionedError("over_email_send_rate_limit", "Email rate limit exceeded")])
      expect(refused.headers.get("x-sb-error-code")).toBe("over_email_send_rate_limit")
      retryAfterOf(refused)
      expect(yield* mailTo(refusedEmail)).toEqual([])

      // Every mail shares the quota, whichever endpoint sends it; the legacy envelope gets the header too.
      const recover = yield* raw(url, "/recover", { body: { email: addresses[0] } })
      expect([recover.status, recover.json]).toEqual([429, legacyError(429, "over_email_send_rate_limit", "Email rate limit exceeded")])
      retryAfterOf(recover)
      const resend = yield* raw(url, "/resend", { body: { type: "signup", email: addresses[1] }, apiVersion: true })
      expect(resend.status).toBe(429)
      retryAfterOf(resend)
      expect(yield* mailTo(addresses[1]!)).toHaveLength(1)
      expect((yield* refusals("email_sent")) - counted).toBe(3)
    })))

  it.effect("texts: a failed text and a test number's cost nothing; the quota'th+1 is refused 429 over_sms_send_rate_limit", () =>
    expectingErrors(Effect.gen(function*() {
      const url = yield* ServerUrl
      const counted = yield* refusals("sms_sent")
      const failed = yield* during(yield* SmsOutage, signUpPhone(url, uniquePhone()))
      expect([failed.status, failed.json?.code]).toEqual([422, "sms_send_failed"])
      for (let i = 0; i < 3; i++) {
        expect((yield* raw(url, "/otp", { body: { phone: `+${TEST_NUMBER}` } })).status).toBe(200)
      }

      for (const phone of [uniquePhone(), uniquePhone()]) {
        expect((yield* signUpPhone(url, phone)).status).toBe(200)
        expect(yield* textsTo(phone.slice(1))).toHaveLength(1)
      }

      const phone = uniquePhone()
      const refused = yield* signUpPhone(url, phone)
      expect([refused.status, refused.json]).toEqual([429, versionedError("over_sms_send_rate_limit", "SMS rate limit exceeded")])
      retryAfterOf(refused)
      expect(yield* textsTo(phone.slice(1))).toEqual([])
      // A test number still works with the quota spent: it is sent nothing.
      expect((yield* raw(url, "/otp", { body: { phone: `+${TEST_NUMBER}` } })).status).toBe(200)
      expect((yield* refusals("sms_sent")) - counted).toBe(1)
    })))
})

const TWO_INSTANCES_ENV = {
  AUTH_EXTERNAL_PHONE_ENABLED: "true",
  AUTH_SMTP_MAX_FREQUENCY: "0",
  AUTH_SMS_MAX_FREQUENCY: "60s",
  AUTH_RATE_LIMIT_EMAIL_SENT: "2/87600h",
  AUTH_SMS_TEST_OTP: `${TEST_NUMBER}:123456`
}

acceptance(TWO_INSTANCES_ENV)("send quotas across instances; the per-recipient window", (it) => {
  it.effect("the per-recipient window's 429 carries the wait it names as Retry-After", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      // A test number: its texts count against no quota, but its frequency window holds.
      expect((yield* raw(url, "/otp", { body: { phone: `+${TEST_NUMBER}` } })).status).toBe(200)
      const again = yield* raw(url, "/otp", { body: { phone: `+${TEST_NUMBER}` }, apiVersion: true })
      expect([again.status, again.json?.code]).toEqual([429, "over_sms_send_rate_limit"])
      const named = /after (\d+) seconds/.exec(again.json?.message ?? "")?.[1]
      expect(again.headers.get("retry-after")).toBe(named)
      expect(Number(named)).toBeGreaterThan(0)
      expect(Number(named)).toBeLessThanOrEqual(60)
    }))

  it.scoped("two servers over one database spend one mail quota between them", () =>
    Effect.gen(function*() {
      const first = yield* ServerUrl
      const other = yield* Layer.build(Layer.fresh(TestServerOver(TWO_INSTANCES_ENV)))
      const second = Context.get(other, ServerUrl)
      expect(second).not.toBe(first)

      expect((yield* signUpEmail(first, uniqueEmail("a1"))).status).toBe(200)
      expect((yield* signUpEmail(second, uniqueEmail("b1"))).status).toBe(200)
      for (const url of [first, second]) {
        const refused = yield* signUpEmail(url, uniqueEmail("over"))
        expect([refused.status, refused.json?.code]).toEqual([429, "over_email_send_rate_limit"])
        retryAfterOf(refused)
      }
    }))
})
