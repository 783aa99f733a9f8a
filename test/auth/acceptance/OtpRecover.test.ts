/**
 * POST /recover, /otp, /magiclink and /resend through auth-js, with the mailed and texted codes and links followed
 * back through /verify: recovery, magic link, passwordless sign-up, SMS codes, the frequency rules and outages.
 */
import { expect } from "@effect/vitest"
import { AuthApiError } from "@supabase/auth-js"
import { Effect, Ref } from "effect"
import { SentSms } from "../../../src/platform/sms/SmsSender.js"
import { MailOutage, ServerUrl } from "../../support/TestServer.js"
import {
  acceptance,
  adminJwt,
  authClient,
  call,
  codeIn,
  decodeJwt,
  expectingErrors,
  linkIn,
  mailTo,
  PASSWORD,
  raw,
  refusedMailTo,
  settledMail,
  uniqueEmail,
  uniquePhone,
  versionedError
} from "./AcceptanceKit.js"

const SITE_URL = "http://localhost:3000"

const textsTo = (phone: string) =>
  Effect.map(Effect.flatMap(SentSms, ({ messages }) => Ref.get(messages)), (all) => all.filter((sms) => sms.to === phone))

const codeInText = (body: string): string => /(\d{6,})/.exec(body)![1]!

const follow = (url: string, link: URL) =>
  call(() => fetch(`${url}${link.pathname}${link.search}`, { redirect: "manual" })).pipe(
    Effect.map((response) => ({ status: response.status, location: response.headers.get("location") ?? "" }))
  )

/** A user who signed up by email and confirmed with the mailed code. */
const confirmedUser = (tag: string) =>
  Effect.gen(function*() {
    const url = yield* ServerUrl
    const email = uniqueEmail(tag)
    const { client } = authClient(url)
    expect((yield* call(() => client.signUp({ email, password: PASSWORD }))).error).toBeNull()
    const [mail] = yield* mailTo(email)
    expect((yield* call(() => client.verifyOtp({ email, token: codeIn(mail!), type: "signup" }))).error).toBeNull()
    return email
  })

/** A phone user confirmed with the texted code; the number as stored (no "+"). */
const confirmedPhoneUser = Effect.gen(function*() {
  const url = yield* ServerUrl
  const phone = uniquePhone()
  const { client } = authClient(url)
  expect((yield* call(() => client.signUp({ phone, password: PASSWORD }))).error).toBeNull()
  const [text] = yield* textsTo(phone.slice(1))
  expect((yield* call(() => client.verifyOtp({ phone, token: codeInText(text!.body), type: "sms" }))).error).toBeNull()
  return phone
})

acceptance({ AUTH_EXTERNAL_PHONE_ENABLED: "true", AUTH_SMTP_MAX_FREQUENCY: "0", AUTH_SMS_MAX_FREQUENCY: "0" })(
  "/recover, /otp, /magiclink, /resend",
  (it) => {
    it.effect("resetPasswordForEmail mails a code; verifyOtp(recovery) signs in once; updateUser sets the new password", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = yield* confirmedUser("recover")
        const { client } = authClient(url)
        const reset = yield* call(() => client.resetPasswordForEmail(email, { redirectTo: `${SITE_URL}/reset` }))
        expect(reset).toEqual({ data: {}, error: null })
        const mail = (yield* mailTo(email)).at(-1)!
        expect(mail.subject).toBe("Reset Your Password")
        const link = linkIn(mail)
        expect(`${link.origin}${link.pathname}`).toBe("http://localhost:9999/verify")
        expect(link.searchParams.get("type")).toBe("recovery")
        expect(link.searchParams.get("redirect_to")).toBe(`${SITE_URL}/reset`)

        const code = codeIn(mail)
        const { data, error } = yield* call(() => client.verifyOtp({ email, token: code, type: "recovery" }))
        expect(error).toBeNull()
        expect(decodeJwt(data.session!.access_token).payload.amr).toEqual([{ method: "otp", timestamp: expect.any(Number) }])
        const again = yield* call(() => authClient(url).client.verifyOtp({ email, token: code, type: "recovery" }))
        expect(again.error).toMatchObject({ status: 403, code: "otp_expired" })

        const newPassword = "N3w-Horse-Battery-Staple"
        expect((yield* call(() => client.updateUser({ password: newPassword }))).error).toBeNull()
        expect((yield* call(() => authClient(url).client.signInWithPassword({ email, password: newPassword }))).error).toBeNull()
        const old = yield* call(() => authClient(url).client.signInWithPassword({ email, password: PASSWORD }))
        expect(old.error).toMatchObject({ code: "invalid_credentials" })
      }))

    it.effect("recover for an unknown address answers exactly {} and mails nothing", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = uniqueEmail("nobody")
        const response = yield* raw(url, "/recover", { body: { email } })
        expect([response.status, response.text]).toEqual([200, "{}"])
        const known = yield* raw(url, "/recover", { body: { email: yield* confirmedUser("known") } })
        expect([known.status, known.text]).toEqual([200, "{}"])
        expect(yield* mailTo(email)).toEqual([])
        const missing = yield* raw(url, "/recover", { body: {}, apiVersion: true })
        expect([missing.status, missing.json]).toEqual([400, versionedError("validation_failed", "Password recovery requires an email")])
      }))

    it.effect("recovery and magic links share a 60-second window, even with SMTP_MAX_FREQUENCY at 0: 429 with the wait", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = yield* confirmedUser("often")
        expect((yield* raw(url, "/recover", { body: { email } })).status).toBe(200)
        const tooSoon = versionedError("over_email_send_rate_limit", "For security purposes, you can only request this after 60 seconds.")
        const recover = yield* raw(url, "/recover", { body: { email }, apiVersion: true })
        expect([recover.status, recover.json]).toEqual([429, tooSoon])
        const magic = yield* raw(url, "/otp", { body: { email }, apiVersion: true })
        expect([magic.status, magic.json]).toEqual([429, tooSoon])
        expect((yield* mailTo(email)).filter((mail) => mail.subject === "Reset Your Password")).toHaveLength(1)
      }))

    it.effect("signInWithOtp for a confirmed user mails a magic link; its code signs in with verifyOtp(magiclink)", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = yield* confirmedUser("magic")
        const { client } = authClient(url)
        const sent = yield* call(() => client.signInWithOtp({ email }))
        expect(sent.error).toBeNull()
        const mail = (yield* mailTo(email)).at(-1)!
        expect(mail.subject).toBe("Your Magic Link")
        expect(linkIn(mail).searchParams.get("type")).toBe("magiclink")
        const { data, error } = yield* call(() => client.verifyOtp({ email, token: codeIn(mail), type: "magiclink" }))
        expect(error).toBeNull()
        expect(data.user).toMatchObject({ email })
      }))

    it.effect("the magic link answers 303 with the session in the fragment, once; type email takes its code too", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = yield* confirmedUser("magiclink")
        expect((yield* raw(url, "/magiclink", { body: { email } })).text).toBe("{}")
        const mail = (yield* mailTo(email)).at(-1)!
        const first = yield* follow(url, linkIn(mail))
        expect(first.status).toBe(303)
        expect(first.location.startsWith(`${SITE_URL}/#access_token=`)).toBe(true)
        expect(first.location).toMatch(/&type=magiclink&sb=$/)
        const second = yield* follow(url, linkIn(mail))
        expect(second.location).toContain("error_code=otp_expired")

        const other = yield* confirmedUser("emailtype")
        expect((yield* call(() => authClient(url).client.signInWithOtp({ email: other }))).error).toBeNull()
        const code = codeIn((yield* mailTo(other)).at(-1)!)
        expect((yield* call(() => authClient(url).client.verifyOtp({ email: other, token: code, type: "email" }))).error).toBeNull()
      }))

    it.effect("signInWithOtp for a new address signs it up and mails the confirmation; shouldCreateUser:false is otp_disabled", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { client } = authClient(url)
        const refused = uniqueEmail("refused")
        const disabled = yield* call(() => client.signInWithOtp({ email: refused, options: { shouldCreateUser: false } }))
        expect(disabled.error).toMatchObject({ status: 422, code: "otp_disabled", message: "Signups not allowed for otp" })
        expect(yield* mailTo(refused)).toEqual([])

        const email = uniqueEmail("fresh")
        expect((yield* call(() => client.signInWithOtp({ email, options: { data: { plan: "free" } } }))).error).toBeNull()
        const [mail] = yield* mailTo(email)
        expect(mail!.subject).toBe("Confirm Your Signup")
        expect(linkIn(mail!).searchParams.get("type")).toBe("signup")
        const { data, error } = yield* call(() => client.verifyOtp({ email, token: codeIn(mail!), type: "email" }))
        expect(error).toBeNull()
        expect(data.user).toMatchObject({ email, user_metadata: { plan: "free", email_verified: true } })
        // Now a confirmed user: the next sign-in is a magic link, even with shouldCreateUser:false.
        expect((yield* call(() => client.signInWithOtp({ email, options: { shouldCreateUser: false } }))).error).toBeNull()
        expect((yield* mailTo(email)).at(-1)!.subject).toBe("Your Magic Link")
      }))

    it.effect("signInWithOtp({phone}) texts a code to a confirmed number; verifyOtp(sms) signs in", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const phone = yield* confirmedPhoneUser
        const response = yield* raw(url, "/otp", { body: { phone } })
        expect(response.status).toBe(200)
        expect(response.json).toEqual({ message_id: expect.any(String) })
        const text = (yield* textsTo(phone.slice(1))).at(-1)!
        const { data, error } = yield* call(() => authClient(url).client.verifyOtp({ phone, token: codeInText(text.body), type: "sms" }))
        expect(error).toBeNull()
        expect(data.user).toMatchObject({ phone: phone.slice(1) })

        const fresh = uniquePhone()
        expect((yield* call(() => authClient(url).client.signInWithOtp({ phone: fresh }))).error).toBeNull()
        const [signupText] = yield* textsTo(fresh.slice(1))
        const signedUp = yield* call(() =>
          authClient(url).client.verifyOtp({ phone: fresh, token: codeInText(signupText!.body), type: "sms" })
        )
        expect(signedUp.error).toBeNull()
      }))

    it.effect("resend(signup) mails a fresh code that confirms; confirmed and unknown addresses get {} and nothing", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const { client } = authClient(url)
        const email = uniqueEmail("resend")
        expect((yield* call(() => client.signUp({ email, password: PASSWORD }))).error).toBeNull()
        expect((yield* call(() => client.resend({ type: "signup", email }))).error).toBeNull()
        const mails = yield* mailTo(email)
        expect(mails.map((mail) => mail.subject)).toEqual(["Confirm Your Signup", "Confirm Your Signup"])
        const stale = yield* call(() => client.verifyOtp({ email, token: codeIn(mails[0]!), type: "signup" }))
        // Unless both codes happen to be equal, the first one no longer works.
        if (codeIn(mails[0]!) !== codeIn(mails[1]!)) expect(stale.error).toMatchObject({ code: "otp_expired" })
        expect((yield* call(() => client.verifyOtp({ email, token: codeIn(mails[1]!), type: "signup" }))).error).toBeNull()

        const done = yield* raw(url, "/resend", { body: { type: "signup", email } })
        expect([done.status, done.text]).toEqual([200, "{}"])
        expect(yield* mailTo(email)).toHaveLength(2)
        const unknown = uniqueEmail("unknown")
        expect((yield* raw(url, "/resend", { body: { type: "signup", email: unknown } })).text).toBe("{}")
        expect(yield* mailTo(unknown)).toEqual([])
        const badType = yield* raw(url, "/resend", { body: { type: "magiclink", email }, apiVersion: true })
        expect([badType.status, badType.json]).toEqual([
          400,
          versionedError("validation_failed", "Missing one of these types: signup, email_change, sms, phone_change")
        ])
      }))

    it.effect("a mail outage: recover and /otp answer as if the mail went (it goes after the answer), and the window is given back", () =>
      expectingErrors(Effect.gen(function*() {
        const url = yield* ServerUrl
        const outage = yield* MailOutage
        const email = yield* confirmedUser("outage")
        const fresh = uniqueEmail("outage-new")
        const mailedBefore = (yield* mailTo(email)).length
        const down = Effect.gen(function*() {
          // GoTrue answers 500 "Error sending … email" here, which only an address with an account can get.
          const recover = yield* raw(url, "/recover", { body: { email }, apiVersion: true })
          expect([recover.status, recover.json]).toEqual([200, {}])
          // Recovery and magic links share one window: the failed recovery mail gives it back, after the answer.
          yield* refusedMailTo(email, 1)
          yield* settledMail
          const magic = yield* raw(url, "/otp", { body: { email }, apiVersion: true })
          expect([magic.status, magic.json]).toEqual([200, {}])
          const signup = yield* raw(url, "/otp", { body: { email: fresh }, apiVersion: true })
          expect([signup.status, signup.json]).toEqual([200, {}])
          yield* refusedMailTo(email, 2)
          yield* refusedMailTo(fresh)
          yield* settledMail
        })
        yield* Effect.zipRight(Ref.set(outage, true), down).pipe(Effect.ensuring(Ref.set(outage, false)))
        // Nothing arrived, so each window was given back: asking again at once works, and the mail arrives.
        expect((yield* raw(url, "/recover", { body: { email } })).status).toBe(200)
        expect((yield* raw(url, "/otp", { body: { email: fresh } })).status).toBe(200)
        expect(yield* mailTo(email)).toHaveLength(mailedBefore + 1)
        expect(yield* mailTo(fresh)).toHaveLength(1)
      })))
    it.effect.each(["recovery", "email"] as const)("a recovery code survives four wrong guesses and not five (type %s)", (type) =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = yield* confirmedUser("guess")
        expect((yield* raw(url, "/recover", { body: { email } })).status).toBe(200)
        const code = codeIn((yield* mailTo(email)).at(-1)!)
        const wrong = code.slice(0, -1) + String((Number(code.at(-1)) + 1) % 10)
        for (let i = 0; i < 5; i++) {
          const { error } = yield* call(() => authClient(url).client.verifyOtp({ email, token: wrong, type }))
          expect(error).toMatchObject({ code: "otp_expired" })
        }
        const { error } = yield* call(() => authClient(url).client.verifyOtp({ email, token: code, type: "recovery" }))
        expect(error).toMatchObject({ code: "otp_expired" })
      }))

    it.effect("/otp's body rules: one of email and phone, a channel only with a phone", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const ask = (body: unknown) => Effect.map(raw(url, "/otp", { body, apiVersion: true }), (r) => [r.status, r.json])
        const email = uniqueEmail("rules")
        expect(yield* ask({ email, phone: uniquePhone() })).toEqual([
          400,
          versionedError("validation_failed", "Only an email address or phone number should be provided")
        ])
        expect(yield* ask({ email, channel: "sms" })).toEqual([
          400,
          versionedError("validation_failed", "Channel should only be specified with Phone OTP")
        ])
        expect(yield* ask({})).toEqual([400, versionedError("validation_failed", "One of email or phone must be set")])
        expect(yield* mailTo(email)).toEqual([])
      }))

    it.effect("resend(email_change) mails both addresses fresh codes that apply the change", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = yield* confirmedUser("rechange")
        const { client } = authClient(url)
        const signedIn = yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))
        const newEmail = uniqueEmail("rechanged")
        const put = yield* raw(url, "/user", { method: "PUT", bearer: signedIn.data.session!.access_token, body: { email: newEmail } })
        expect(put.status).toBe(200)
        expect((yield* call(() => client.resend({ type: "email_change", email: newEmail }))).error).toBeNull()
        const toNew = yield* mailTo(newEmail)
        expect(toNew).toHaveLength(2)
        const toCurrent = (yield* mailTo(email)).at(-1)!
        const first = yield* raw(url, "/verify", { body: { type: "email_change", email: newEmail, token: codeIn(toNew[1]!) } })
        expect(first.status).toBe(200)
        const second = yield* call(() => client.verifyOtp({ email, token: codeIn(toCurrent), type: "email_change" }))
        expect(second.error).toBeNull()
        expect(second.data.user).toMatchObject({ email: newEmail })
        // Nothing pending any more: {} and no mail.
        expect((yield* raw(url, "/resend", { body: { type: "email_change", email: newEmail } })).text).toBe("{}")
        expect(yield* mailTo(newEmail)).toHaveLength(2)
      }))

    it.effect("resend(phone_change) texts a fresh code that applies the change", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const phone = yield* confirmedPhoneUser
        const { client } = authClient(url)
        const signedIn = yield* call(() => client.signInWithPassword({ phone, password: PASSWORD }))
        const newPhone = uniquePhone()
        const put = yield* raw(url, "/user", { method: "PUT", bearer: signedIn.data.session!.access_token, body: { phone: newPhone } })
        expect(put.status).toBe(200)
        const resent = yield* raw(url, "/resend", { body: { type: "phone_change", phone: newPhone } })
        expect([resent.status, resent.json]).toEqual([200, { message_id: expect.any(String) }])
        const texts = yield* textsTo(newPhone.slice(1))
        expect(texts).toHaveLength(2)
        const { data, error } = yield* call(() =>
          client.verifyOtp({ phone: newPhone, token: codeInText(texts[1]!.body), type: "phone_change" })
        )
        expect(error).toBeNull()
        expect(data.user).toMatchObject({ phone: newPhone.slice(1) })
      }))
  }
)

acceptance({ AUTH_MAILER_AUTOCONFIRM: "true" })("/otp with autoconfirm", (it) => {
  it.effect("a new address is signed up confirmed and gets the magic link straight away", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("auto")
      const { client } = authClient(url)
      expect((yield* call(() => client.signInWithOtp({ email }))).error).toBeNull()
      const mails = yield* mailTo(email)
      expect(mails.map((mail) => mail.subject)).toEqual(["Your Magic Link"])
      const { data, error } = yield* call(() => client.verifyOtp({ email, token: codeIn(mails[0]!), type: "magiclink" }))
      expect(error).toBeNull()
      expect(data.user).toMatchObject({ email, email_confirmed_at: expect.any(String) })
    }))
})

acceptance({ AUTH_EXTERNAL_EMAIL_MAGIC_LINK_ENABLED: "false", AUTH_SMTP_MAX_FREQUENCY: "0" })("EXTERNAL_EMAIL_MAGIC_LINK_ENABLED=false", (it) => {
  it.effect("/otp with an email and /magiclink are GoTrue's 422 and mail nothing; passwords, recovery and admin links still work", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = yield* confirmedUser("no-magic")
      const fresh = uniqueEmail("no-magic-new")
      const mailedBefore = (yield* mailTo(email)).length
      const { client } = authClient(url)
      for (const address of [email, fresh]) {
        const { error } = yield* call(() => client.signInWithOtp({ email: address }))
        expect(error).toBeInstanceOf(AuthApiError)
        expect(error).toMatchObject({ status: 422, code: "email_provider_disabled", message: "Login with magic link is disabled" })
        const legacy = yield* raw(url, "/magiclink", { body: { email: address } })
        expect([legacy.status, legacy.json]).toEqual([422, { code: 422, error_code: "email_provider_disabled", msg: "Login with magic link is disabled" }])
      }
      yield* settledMail
      expect(yield* mailTo(email)).toHaveLength(mailedBefore)
      expect(yield* mailTo(fresh)).toEqual([])
      expect((yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))).error).toBeNull()
      expect((yield* raw(url, "/recover", { body: { email } })).status).toBe(200)
      const generated = yield* raw(url, "/admin/generate_link", { bearer: adminJwt(), body: { type: "magiclink", email } })
      expect(generated.status).toBe(200)
      const { error } = yield* call(() => client.verifyOtp({ email, token: generated.json.email_otp, type: "magiclink" }))
      expect(error).toBeNull()
    }))
})
