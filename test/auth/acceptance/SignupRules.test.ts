/**
 * Sign-up as the configuration shapes it: email confirmation (no autoconfirm), the provider and sign-up switches,
 * anonymous sign-ins, and password changes that need a reauthentication nonce.
 */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { AuthApiError } from "@supabase/auth-js"
import { Effect, Ref } from "effect"
import { SentSms } from "../../../src/platform/sms/SmsSender.js"
import { MailOutage, ServerUrl } from "../../support/TestServer.js"
import {
  acceptance,
  authClient,
  call,
  codeIn,
  expectingErrors,
  legacyError,
  linkIn,
  mailTo,
  PASSWORD,
  raw,
  refusedMailTo,
  sentMail,
  settledMail,
  uniqueEmail,
  uniquePhone,
  versionedError
} from "./AcceptanceKit.js"

const EXTERNAL_URL = "http://auth.gatehouse.test:9999"
const SITE_URL = "http://app.gatehouse.test:3000"

acceptance({
  API_EXTERNAL_URL: EXTERNAL_URL,
  AUTH_SITE_URL: SITE_URL,
  AUTH_EXTERNAL_PHONE_ENABLED: "true"
})("sign-up with confirmation required", (it) => {
  it.effect("signUp returns the user without a session and mails one /verify link on API_EXTERNAL_URL", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("confirm")
      const before = Date.now()
      const { data, error } = yield* call(() => authClient(url).client.signUp({ email, password: PASSWORD, options: { data: { a: 1 } } }))
      expect(error).toBeNull()
      expect(data.session).toBeNull()
      expect(data.user).toMatchObject({ email, user_metadata: { a: 1 }, confirmation_sent_at: expect.any(String), is_anonymous: false })
      expect(data.user!.email_confirmed_at).toBeUndefined()
      expect(data.user!.identities).toHaveLength(1)
      const sentAt = Date.parse(data.user!.confirmation_sent_at!)
      expect(sentAt).toBeGreaterThanOrEqual(before - 1000)
      expect(sentAt).toBeLessThanOrEqual(Date.now() + 1000)

      const mails = yield* mailTo(email)
      expect(mails).toHaveLength(1)
      expect(mails[0]!.subject).toBe("Confirm Your Signup")
      const link = linkIn(mails[0]!)
      expect(`${link.origin}${link.pathname}`).toBe(`${EXTERNAL_URL}/verify`)
      expect(link.searchParams.get("type")).toBe("signup")
      expect(link.searchParams.get("token")).toMatch(/\S{10,}/)
      expect(link.searchParams.get("redirect_to")).toBe(SITE_URL)
      expect(mails[0]!.html).toContain(`${EXTERNAL_URL}/verify?`)
    }))

  it.effect("emailRedirectTo reaches the link when it is on the site, and is replaced by SITE_URL when it is not", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const cases = [[`${SITE_URL}/welcome?step=2`, `${SITE_URL}/welcome?step=2`], ["https://evil.example/steal", SITE_URL]] as const
      for (const [requested, expected] of cases) {
        const email = uniqueEmail("redirect")
        const { error } = yield* call(() =>
          authClient(url).client.signUp({ email, password: PASSWORD, options: { emailRedirectTo: requested } })
        )
        expect(error).toBeNull()
        const [mail] = yield* mailTo(email)
        expect(linkIn(mail!).searchParams.get("redirect_to")).toBe(expected)
      }
    }))

  it.effect("an unconfirmed user cannot sign in: email_not_confirmed", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("unconfirmed")
      expect((yield* call(() => authClient(url).client.signUp({ email, password: PASSWORD }))).error).toBeNull()
      const { data, error } = yield* call(() => authClient(url).client.signInWithPassword({ email, password: PASSWORD }))
      expect(error).toBeInstanceOf(AuthApiError)
      expect(error).toMatchObject({ status: 400, code: "email_not_confirmed", message: "Email not confirmed" })
      expect(data.session).toBeNull()
      // The password is still checked first: a wrong one does not reveal that the account is unconfirmed.
      const wrong = yield* call(() => authClient(url).client.signInWithPassword({ email, password: "Wr0ng-Password" }))
      expect(wrong.error).toMatchObject({ status: 400, code: "invalid_credentials" })
    }))

  it.effect("signing up again within SMTP_MAX_FREQUENCY is a 429 over_email_send_rate_limit and sends nothing", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("again")
      expect((yield* call(() => authClient(url).client.signUp({ email, password: PASSWORD }))).error).toBeNull()
      const { error } = yield* call(() => authClient(url).client.signUp({ email, password: "Another-Passw0rd" }))
      expect(error).toBeInstanceOf(AuthApiError)
      expect(error).toMatchObject({ status: 429, code: "over_email_send_rate_limit" })
      expect(error!.message).toMatch(/^For security purposes, you can only request this after \d+ seconds\.$/)
      expect(yield* mailTo(email)).toHaveLength(1)

      const legacy = yield* raw(url, "/signup", { body: { email, password: PASSWORD } })
      expect(legacy.status).toBe(429)
      expect(legacy.json).toMatchObject({ code: 429, error_code: "over_email_send_rate_limit" })
    }))

  it.effect("once the window has passed, parallel re-sign-ups send exactly one new confirmation; the rest get 429", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const sql = yield* SqlClient.SqlClient
      const email = uniqueEmail("race")
      expect((yield* raw(url, "/signup", { body: { email, password: PASSWORD } })).status).toBe(200)
      yield* sql`UPDATE auth.users SET confirmation_sent_at = now() - interval '1 day' WHERE email = ${email}`
      const answers = yield* Effect.all(
        Array.from({ length: 8 }, () => raw(url, "/signup", { body: { email, password: PASSWORD } })),
        { concurrency: "unbounded" }
      )
      expect(answers.map((a) => a.status).sort()).toEqual([200, 429, 429, 429, 429, 429, 429, 429])
      expect(yield* mailTo(email)).toHaveLength(2)
    }))

  it.effect("when the confirmation cannot be sent, the sign-up still answers (the mail goes after it) and can be retried at once", () =>
    expectingErrors(Effect.gen(function*() {
      const url = yield* ServerUrl
      const outage = yield* MailOutage
      const email = uniqueEmail("outage")
      const failed = yield* Effect.zipRight(
        Ref.set(outage, true),
        Effect.zipLeft(raw(url, "/signup", { body: { email, password: PASSWORD } }), Effect.zipRight(refusedMailTo(email), settledMail))
      ).pipe(Effect.ensuring(Ref.set(outage, false)))
      // GoTrue answers 500 "Error sending confirmation email"; the answer here does not wait for the mail server.
      expect(failed.status).toBe(200)
      expect(failed.json).toMatchObject({ email, identities: [{ provider: "email" }] })
      // Nothing arrived, so the window was given back: signing up again at once sends the confirmation.
      expect((yield* raw(url, "/signup", { body: { email, password: PASSWORD } })).status).toBe(200)
      const [mail] = yield* mailTo(email)
      expect(yield* mailTo(email)).toHaveLength(1)
      const { error } = yield* call(() => authClient(url).client.verifyOtp({ email, token: codeIn(mail!), type: "signup" }))
      expect(error).toBeNull()
    })))

  it.effect("signing up a confirmed email again gets the faux user and changes nothing", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const sql = yield* SqlClient.SqlClient
      const email = uniqueEmail("taken")
      const first = yield* call(() => authClient(url).client.signUp({ email, password: PASSWORD }))
      expect(first.error).toBeNull()
      yield* sql`UPDATE auth.users SET email_confirmed_at = now() WHERE email = ${email}`
      const mailsBefore = (yield* sentMail).length

      const { data, error } = yield* call(() => authClient(url).client.signUp({ email, password: "Attack3r-Password" }))
      expect(error).toBeNull()
      expect(data.session).toBeNull()
      expect(data.user).toMatchObject({ email, identities: [], confirmation_sent_at: expect.any(String) })
      expect(data.user!.id).not.toBe(first.data.user!.id)
      // Shaped like a real new user's metadata, so it cannot be told apart by it.
      expect(Object.keys(data.user!.user_metadata).sort()).toEqual(Object.keys(first.data.user!.user_metadata).sort())
      expect(data.user!.user_metadata).toMatchObject({ sub: data.user!.id, email_verified: false })
      expect((yield* sentMail).length).toBe(mailsBefore)

      const owner = yield* call(() => authClient(url).client.signInWithPassword({ email, password: PASSWORD }))
      expect(owner.error).toBeNull()
      expect(owner.data.user!.id).toBe(first.data.user!.id)
      const attacker = yield* call(() => authClient(url).client.signInWithPassword({ email, password: "Attack3r-Password" }))
      expect(attacker.error).toMatchObject({ code: "invalid_credentials" })
    }))

  it.effect("a phone sign-up without SMS autoconfirm texts a code and the number cannot sign in yet", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const phone = uniquePhone()
      const { data, error } = yield* call(() => authClient(url).client.signUp({ phone, password: PASSWORD }))
      expect(error).toBeNull()
      expect(data.session).toBeNull()
      expect(data.user).toMatchObject({ phone: phone.slice(1), confirmation_sent_at: expect.any(String) })
      const texts = (yield* Effect.flatMap(SentSms, ({ messages }) => Ref.get(messages))).filter((sms) => sms.to === phone.slice(1))
      expect(texts).toHaveLength(1)
      expect(texts[0]!.body).toMatch(/\d{6}/)
      const signIn = yield* call(() => authClient(url).client.signInWithPassword({ phone, password: PASSWORD }))
      expect(signIn.error).toMatchObject({ status: 400, code: "phone_not_confirmed" })
    }))

  it.effect("signInAnonymously while anonymous sign-ins are off is a 422 anonymous_provider_disabled", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { data, error } = yield* call(() => authClient(url).client.signInAnonymously())
      expect(error).toBeInstanceOf(AuthApiError)
      expect(error).toMatchObject({ status: 422, code: "anonymous_provider_disabled", message: "Anonymous sign-ins are disabled" })
      expect(data.session).toBeNull()
      const legacy = yield* raw(url, "/signup", { body: {} })
      expect(legacy.json).toEqual(legacyError(422, "anonymous_provider_disabled", "Anonymous sign-ins are disabled"))
    }))
})

acceptance({ AUTH_DISABLE_SIGNUP: "true", AUTH_EXTERNAL_ANONYMOUS_USERS_ENABLED: "true", AUTH_MAILER_AUTOCONFIRM: "true" })(
  "DISABLE_SIGNUP",
  (it) => {
    it.effect("every kind of sign-up is a 422 signup_disabled", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = yield* call(() => authClient(url).client.signUp({ email: uniqueEmail("closed"), password: PASSWORD }))
        expect(email.error).toBeInstanceOf(AuthApiError)
        expect(email.error).toMatchObject({ status: 422, code: "signup_disabled", message: "Signups not allowed for this instance" })
        const anonymous = yield* call(() => authClient(url).client.signInAnonymously())
        expect(anonymous.error).toMatchObject({ status: 422, code: "signup_disabled" })
        const versioned = yield* raw(url, "/signup", { body: { email: uniqueEmail("closed"), password: PASSWORD }, apiVersion: true })
        expect(versioned.json).toEqual(versionedError("signup_disabled", "Signups not allowed for this instance"))
      }))
  }
)

acceptance({ AUTH_EXTERNAL_EMAIL_ENABLED: "false", AUTH_MAILER_AUTOCONFIRM: "true" })("EXTERNAL_EMAIL_ENABLED=false", (it) => {
  it.effect("email sign-up is a 400 and email sign-in a 422, both email_provider_disabled; phone is off by default", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("no-email")
      const signUp = yield* call(() => authClient(url).client.signUp({ email, password: PASSWORD }))
      expect(signUp.error).toBeInstanceOf(AuthApiError)
      expect(signUp.error).toMatchObject({ status: 400, code: "email_provider_disabled", message: "Email signups are disabled" })
      const signIn = yield* call(() => authClient(url).client.signInWithPassword({ email, password: PASSWORD }))
      expect(signIn.error).toMatchObject({ status: 422, code: "email_provider_disabled", message: "Email logins are disabled" })
      const phone = yield* call(() => authClient(url).client.signUp({ phone: uniquePhone(), password: PASSWORD }))
      expect(phone.error).toMatchObject({ status: 400, code: "phone_provider_disabled" })
    }))
})

acceptance({ AUTH_MAILER_AUTOCONFIRM: "true", AUTH_SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION: "true" })(
  "SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION",
  (it) => {
    it.effect("a password change needs the nonce mailed by /reauthenticate; a wrong or spent one is refused", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = uniqueEmail("reauth")
        const { client } = authClient(url)
        expect((yield* call(() => client.signUp({ email, password: PASSWORD }))).error).toBeNull()
        const newPassword = "Brand-N3w-Password"

        const without = yield* call(() => client.updateUser({ password: newPassword }))
        expect(without.error).toBeInstanceOf(AuthApiError)
        expect(without.error).toMatchObject({ status: 400, code: "reauthentication_needed" })

        const asked = yield* call(() => client.reauthenticate())
        expect(asked.error).toBeNull()
        const mails = yield* mailTo(email)
        expect(mails).toHaveLength(1)
        const nonce = codeIn(mails[0]!)
        expect(nonce).toMatch(/^\d{6}$/)

        const wrongNonce = nonce === "000000" ? "111111" : "000000"
        const wrong = yield* call(() => client.updateUser({ password: newPassword, nonce: wrongNonce }))
        expect(wrong.error).toMatchObject({ status: 422, code: "reauthentication_not_valid" })

        const changed = yield* call(() => client.updateUser({ password: newPassword, nonce }))
        expect(changed.error).toBeNull()
        const signIn = yield* call(() => authClient(url).client.signInWithPassword({ email, password: newPassword }))
        expect(signIn.error).toBeNull()

        const replay = yield* call(() => client.updateUser({ password: "Th1rd-Password!", nonce }))
        expect(replay.error).toMatchObject({ status: 422, code: "reauthentication_not_valid" })
        // Everything else in PUT /user needs no nonce.
        const data = yield* call(() => client.updateUser({ data: { ok: true } }))
        expect(data.error).toBeNull()
      }))
  }
)
