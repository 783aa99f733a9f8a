/**
 * RATE_LIMIT_EMAIL_PER_RECIPIENT and RATE_LIMIT_SMS_PER_RECIPIENT over HTTP: past the limit, a message to that one
 * address or number is refused with 429, its own error code and a Retry-After naming when the window frees a slot,
 * whichever flow sends it, while other recipients still get theirs; the count holds across two server instances
 * over one database; and auth-js shows the code.
 *
 * The windows are ten years long, so no test can see a slot free while it runs, and nothing waits on a clock. With
 * the settings unset one address may be sent any number of mails, as before; and GoTrue's per-address frequency
 * windows, the 429 nearest to these, carry the wait their message names as Retry-After.
 */
import { expect } from "@effect/vitest"
import { Context, Effect, Layer, Ref } from "effect"
import { SentSms } from "../../../src/platform/sms/SmsSender.js"
import { MailOutage, ServerUrl, SmsOutage, TestServerOver } from "../../support/TestServer.js"
import {
  acceptance,
  adminJwt,
  authClient,
  call,
  codeIn,
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
const EMAIL_REFUSED = "Email rate limit exceeded for this address"
const SMS_REFUSED = "SMS rate limit exceeded for this phone number"

const ENV = {
  AUTH_EXTERNAL_PHONE_ENABLED: "true",
  AUTH_SMTP_MAX_FREQUENCY: "0",
  AUTH_SMS_MAX_FREQUENCY: "0",
  AUTH_MAILER_SECURE_EMAIL_CHANGE_ENABLED: "false",
  AUTH_RATE_LIMIT_EMAIL_PER_RECIPIENT: "2/87600h",
  AUTH_RATE_LIMIT_SMS_PER_RECIPIENT: "2/87600h",
  AUTH_MFA_PHONE_ENROLL_ENABLED: "true",
  AUTH_MFA_PHONE_VERIFY_ENABLED: "true",
  AUTH_MFA_PHONE_MAX_FREQUENCY: "0"
}

const textsTo = (phone: string) =>
  Effect.map(Effect.flatMap(SentSms, ({ messages }) => Ref.get(messages)), (all) => all.filter((sms) => sms.to === phone.replace(/^\+/, "")))

/**
 * The Retry-After of a refusal: whole seconds until the recipient's first message of the window is ten years old,
 * so a little under ten years (the test's own run is all that has passed since), never more.
 */
const retryAfterOf = (response: RawResponse): number => {
  const value = response.headers.get("retry-after") ?? ""
  expect(value).toMatch(/^[1-9]\d*$/)
  expect(Number(value)).toBeLessThanOrEqual(TEN_YEARS_SECONDS)
  expect(Number(value)).toBeGreaterThan(TEN_YEARS_SECONDS - 3600)
  return Number(value)
}

/** A confirmed user signed in with auth-js: one mail (the sign-up confirmation) already went to the address. */
const signedIn = (url: string, email: string) =>
  Effect.gen(function*() {
    const { client } = authClient(url)
    expect((yield* call(() => client.signUp({ email, password: PASSWORD }))).error).toBeNull()
    yield* settledMail
    const [confirmation] = yield* mailTo(email)
    expect((yield* call(() => client.verifyOtp({ email, token: codeIn(confirmation!), type: "signup" }))).error).toBeNull()
    return client
  })

/** Runs `effect` with an outage switched on, and switches it off again whatever happens. */
const during = <A, E, R>(outage: Ref.Ref<boolean>, effect: Effect.Effect<A, E, R>) =>
  Effect.zipRight(Ref.set(outage, true), effect).pipe(Effect.ensuring(Ref.set(outage, false)))

acceptance(ENV)("per-recipient send limits", (it) => {
  it.effect("a mail or text that failed to go out does not count against its recipient", () =>
    expectingErrors(Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("outage")
      const failed = yield* during(
        yield* MailOutage,
        Effect.zipLeft(raw(url, "/signup", { body: { email, password: PASSWORD } }), Effect.zipRight(refusedMailTo(email), settledMail))
      )
      expect(failed.status).toBe(200)
      for (let i = 0; i < 2; i++) expect((yield* raw(url, "/resend", { body: { type: "signup", email } })).status).toBe(200)
      yield* settledMail
      expect(yield* mailTo(email)).toHaveLength(2)
      expect((yield* raw(url, "/resend", { body: { type: "signup", email } })).status).toBe(429)

      const phone = uniquePhone()
      const unsent = yield* during(yield* SmsOutage, raw(url, "/signup", { body: { phone, password: PASSWORD }, apiVersion: true }))
      expect([unsent.status, unsent.json?.code]).toEqual([422, "sms_send_failed"])
      expect((yield* raw(url, "/signup", { body: { phone, password: PASSWORD } })).status).toBe(200)
      expect((yield* raw(url, "/otp", { body: { phone } })).status).toBe(200)
      expect(yield* textsTo(phone)).toHaveLength(2)
      expect((yield* raw(url, "/otp", { body: { phone } })).status).toBe(429)
    })))

  it.effect("mail: the third to one address is refused 429 over_email_recipient_rate_limit with Retry-After, in every flow; others still get theirs", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const counted = yield* refusals("email_per_recipient")
      const email = uniqueEmail("recipient")
      expect((yield* raw(url, "/signup", { body: { email, password: PASSWORD }, apiVersion: true })).status).toBe(200)
      expect((yield* raw(url, "/resend", { body: { type: "signup", email } })).status).toBe(200)
      yield* settledMail
      expect(yield* mailTo(email)).toHaveLength(2)

      // (A refused recovery or magic link gives its frequency window back, so each flow below meets the limit.)
      const magic = yield* raw(url, "/magiclink", { body: { email }, apiVersion: true })
      expect([magic.status, magic.json]).toEqual([429, versionedError("over_email_recipient_rate_limit", EMAIL_REFUSED)])
      expect(magic.headers.get("x-sb-error-code")).toBe("over_email_recipient_rate_limit")
      const first = retryAfterOf(magic)
      // The legacy envelope gets the same code and header; the address counts however it is cased.
      const recover = yield* raw(url, "/recover", { body: { email: email.toUpperCase() } })
      expect([recover.status, recover.json]).toEqual([429, legacyError(429, "over_email_recipient_rate_limit", EMAIL_REFUSED)])
      // The wait only shrinks while nothing is sent: it is the same first message's age.
      expect(retryAfterOf(recover)).toBeLessThanOrEqual(first)
      const resend = yield* raw(url, "/resend", { body: { type: "signup", email }, apiVersion: true })
      expect([resend.status, resend.json?.code]).toEqual([429, "over_email_recipient_rate_limit"])
      retryAfterOf(resend)
      const otp = yield* raw(url, "/otp", { body: { email }, apiVersion: true })
      expect([otp.status, otp.json?.code]).toEqual([429, "over_email_recipient_rate_limit"])
      retryAfterOf(otp)
      yield* settledMail
      expect(yield* mailTo(email)).toHaveLength(2)

      // Another address is not affected.
      const other = uniqueEmail("other")
      expect((yield* raw(url, "/signup", { body: { email: other, password: PASSWORD } })).status).toBe(200)
      yield* settledMail
      expect(yield* mailTo(other)).toHaveLength(1)
      expect((yield* refusals("email_per_recipient")) - counted).toBe(4)
    }))

  it.effect("auth-js shows the code and status: reauthentication and email change count against the address they go to", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("reauth")
      const client = yield* signedIn(url, email)
      expect((yield* call(() => client.reauthenticate())).error).toBeNull()
      expect(yield* mailTo(email)).toHaveLength(2)
      const refused = yield* call(() => client.reauthenticate())
      expect(refused.error).toMatchObject({ status: 429, code: "over_email_recipient_rate_limit", message: EMAIL_REFUSED })
      const magic = yield* call(() => authClient(url).client.signInWithOtp({ email }))
      expect(magic.error).toMatchObject({ status: 429, code: "over_email_recipient_rate_limit" })
      expect(yield* mailTo(email)).toHaveLength(2)

      // The change's mail goes to the new address, which has a window of its own: two, then refused.
      const newEmail = uniqueEmail("changed")
      expect((yield* call(() => client.updateUser({ email: newEmail }))).error).toBeNull()
      expect((yield* call(() => client.updateUser({ email: newEmail }))).error).toBeNull()
      expect(yield* mailTo(newEmail)).toHaveLength(2)
      const change = yield* call(() => client.updateUser({ email: newEmail }))
      expect(change.error).toMatchObject({ status: 429, code: "over_email_recipient_rate_limit" })
      expect(yield* mailTo(newEmail)).toHaveLength(2)
    }))

  it.effect("an admin's invitation counts against the invitee's address too", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("invitee")
      const invite = () => raw(url, "/invite", { body: { email }, bearer: adminJwt(), apiVersion: true })
      expect((yield* invite()).status).toBe(200)
      expect((yield* invite()).status).toBe(200)
      const refused = yield* invite()
      expect([refused.status, refused.json?.code]).toEqual([429, "over_email_recipient_rate_limit"])
      retryAfterOf(refused)
      expect(yield* mailTo(email)).toHaveLength(2)
    }))

  it.effect("texts: the third to one number is refused 429 over_sms_recipient_rate_limit with Retry-After; phone change counts too", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const counted = yield* refusals("sms_per_recipient")
      const phone = uniquePhone()
      expect((yield* raw(url, "/signup", { body: { phone, password: PASSWORD } })).status).toBe(200)
      expect((yield* raw(url, "/otp", { body: { phone } })).status).toBe(200)
      expect(yield* textsTo(phone)).toHaveLength(2)
      const refused = yield* raw(url, "/otp", { body: { phone }, apiVersion: true })
      expect([refused.status, refused.json]).toEqual([429, versionedError("over_sms_recipient_rate_limit", SMS_REFUSED)])
      retryAfterOf(refused)
      const resend = yield* raw(url, "/resend", { body: { type: "sms", phone } })
      expect([resend.status, resend.json]).toEqual([429, legacyError(429, "over_sms_recipient_rate_limit", SMS_REFUSED)])
      retryAfterOf(resend)
      expect(yield* textsTo(phone)).toHaveLength(2)

      // A signed-in user's new number: its own window, two texts, then refused through auth-js.
      const client = yield* signedIn(url, uniqueEmail("phone-change"))
      const newPhone = uniquePhone()
      expect((yield* call(() => client.updateUser({ phone: newPhone }))).error).toBeNull()
      expect((yield* call(() => client.updateUser({ phone: newPhone }))).error).toBeNull()
      const change = yield* call(() => client.updateUser({ phone: newPhone }))
      expect(change.error).toMatchObject({ status: 429, code: "over_sms_recipient_rate_limit", message: SMS_REFUSED })
      expect(yield* textsTo(newPhone)).toHaveLength(2)
      expect((yield* refusals("sms_per_recipient")) - counted).toBe(3)
    }))

  it.effect("an MFA phone factor's challenge texts count against its number", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const client = yield* signedIn(url, uniqueEmail("mfa-phone"))
      const phone = uniquePhone()
      const enrolled = yield* call(() => client.mfa.enroll({ factorType: "phone", phone }))
      expect(enrolled.error).toBeNull()
      const factorId = enrolled.data!.id
      for (let i = 0; i < 2; i++) expect((yield* call(() => client.mfa.challenge({ factorId }))).error).toBeNull()
      expect(yield* textsTo(phone)).toHaveLength(2)
      const refused = yield* call(() => client.mfa.challenge({ factorId }))
      expect(refused.error).toMatchObject({ status: 429, code: "over_sms_recipient_rate_limit" })
      expect(yield* textsTo(phone)).toHaveLength(2)
    }))

  it.scoped("two servers over one database count one window per recipient between them", () =>
    Effect.gen(function*() {
      const first = yield* ServerUrl
      const other = yield* Layer.build(Layer.fresh(TestServerOver(ENV)))
      const second = Context.get(other, ServerUrl)
      expect(second).not.toBe(first)
      const email = uniqueEmail("shared")
      expect((yield* raw(first, "/signup", { body: { email, password: PASSWORD } })).status).toBe(200)
      expect((yield* raw(second, "/resend", { body: { type: "signup", email } })).status).toBe(200)
      for (const url of [first, second]) {
        const refused = yield* raw(url, "/magiclink", { body: { email }, apiVersion: true })
        expect([refused.status, refused.json?.code]).toEqual([429, "over_email_recipient_rate_limit"])
        retryAfterOf(refused)
      }
    }))
})

acceptance({ AUTH_SMTP_MAX_FREQUENCY: "0" })("without per-recipient limits (the default)", (it) => {
  it.effect("one address may be sent any number of mails, as before", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("unlimited")
      expect((yield* raw(url, "/signup", { body: { email, password: PASSWORD } })).status).toBe(200)
      for (let i = 0; i < 4; i++) expect((yield* raw(url, "/resend", { body: { type: "signup", email } })).status).toBe(200)
      yield* settledMail
      expect(yield* mailTo(email)).toHaveLength(5)
    }))
})

/** The wait a frequency refusal names in its message, which its Retry-After must equal. */
const namedWait = (response: RawResponse): number => {
  const named = /after (\d+) seconds/.exec(response.json?.message ?? response.json?.msg ?? "")?.[1]
  expect(response.headers.get("retry-after")).toBe(named)
  return Number(named)
}

acceptance({})("the per-address frequency windows (GoTrue's SMTP_MAX_FREQUENCY, 900 s here)", (it) => {
  it.effect("a mail asked for too soon is 429 over_email_send_rate_limit whose Retry-After is the wait it names, in both envelopes", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("frequency")
      expect((yield* raw(url, "/signup", { body: { email, password: PASSWORD } })).status).toBe(200)
      const resend = yield* raw(url, "/resend", { body: { type: "signup", email }, apiVersion: true })
      expect([resend.status, resend.json?.code]).toEqual([429, "over_email_send_rate_limit"])
      const wait = namedWait(resend)
      expect(wait).toBeGreaterThan(0)
      expect(wait).toBeLessThanOrEqual(900)

      expect((yield* raw(url, "/recover", { body: { email } })).status).toBe(200)
      const again = yield* raw(url, "/recover", { body: { email } })
      expect([again.status, again.json?.error_code]).toEqual([429, "over_email_send_rate_limit"])
      expect(namedWait(again)).toBeLessThanOrEqual(900)
      // A magic link shares the recovery mail's window.
      const magic = yield* raw(url, "/magiclink", { body: { email }, apiVersion: true })
      expect([magic.status, magic.json?.code]).toEqual([429, "over_email_send_rate_limit"])
      expect(namedWait(magic)).toBeGreaterThan(0)
    }))
})
