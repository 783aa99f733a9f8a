/**
 * POST and GET /verify through auth-js and fetch: sign-up confirmation by code and by link, phone confirmation,
 * email change with both confirmations, phone change, the attempt limit, expiry, single use, and the body rules.
 */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { AuthApiError } from "@supabase/auth-js"
import { Effect, Ref } from "effect"
import { SentSms } from "../../../src/platform/sms/SmsSender.js"
import { ServerUrl } from "../../support/TestServer.js"
import {
  acceptance,
  authClient,
  call,
  codeIn,
  legacyError,
  linkIn,
  mailTo,
  PASSWORD,
  raw,
  uniqueEmail,
  uniquePhone,
  versionedError
} from "./AcceptanceKit.js"

const SITE_URL = "http://localhost:3000"
const TEST_NUMBER = "15550001111"
const TEST_CODE = "123456"

const textsTo = (phone: string) =>
  Effect.map(Effect.flatMap(SentSms, ({ messages }) => Ref.get(messages)), (all) => all.filter((sms) => sms.to === phone))

const codeInText = (body: string): string => /(\d{6,})/.exec(body)![1]!

/** A wrong code of the same length: the last digit moved on by one. */
const wrong = (code: string): string => code.slice(0, -1) + String((Number(code.at(-1)) + 1) % 10)

/** Signs up by email and returns the address with the mailed code and link. */
const signUpByEmail = (tag: string) =>
  Effect.gen(function*() {
    const url = yield* ServerUrl
    const email = uniqueEmail(tag)
    expect((yield* call(() => authClient(url).client.signUp({ email, password: PASSWORD }))).error).toBeNull()
    const [mail] = yield* mailTo(email)
    return { email, code: codeIn(mail!), link: linkIn(mail!) }
  })

/** GET without following the redirect, as a browser's first hop. */
const follow = (url: string, link: URL) =>
  call(() => fetch(`${url}${link.pathname}${link.search}`, { redirect: "manual" })).pipe(
    Effect.map((response) => ({ status: response.status, location: response.headers.get("location") ?? "" }))
  )

const fragmentOf = (location: string) => new URLSearchParams(location.slice(location.indexOf("#") + 1))

acceptance({ AUTH_EXTERNAL_PHONE_ENABLED: "true", AUTH_SMS_TEST_OTP: `${TEST_NUMBER}:${TEST_CODE}` })("/verify", (it) => {
  it.effect("verifyOtp with the mailed code confirms the sign-up and signs in; the code works once", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { code, email } = yield* signUpByEmail("code")
      const { client } = authClient(url)
      const { data, error } = yield* call(() => client.verifyOtp({ email, token: code, type: "signup" }))
      expect(error).toBeNull()
      expect(data.session).not.toBeNull()
      expect(data.user).toMatchObject({ email, user_metadata: { email_verified: true } })
      expect(data.user!.email_confirmed_at).toEqual(expect.any(String))
      expect(data.user!.identities![0]!.identity_data).toMatchObject({ email_verified: true })
      const claims = JSON.parse(Buffer.from(data.session!.access_token.split(".")[1]!, "base64url").toString())
      expect(claims.amr).toEqual([{ method: "otp", timestamp: expect.any(Number) }])

      const again = yield* call(() => client.verifyOtp({ email, token: code, type: "signup" }))
      expect(again.error).toBeInstanceOf(AuthApiError)
      expect(again.error).toMatchObject({ status: 403, code: "otp_expired", message: "Token has expired or is invalid" })
      expect((yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))).error).toBeNull()
    }))

  it.effect("the mailed link answers 303 to SITE_URL with the session in the fragment, once; then password sign-in works", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { email, link } = yield* signUpByEmail("link")
      const first = yield* follow(url, link)
      expect(first.status).toBe(303)
      // The link's redirect_to is SITE_URL, normalised as a URL.
      expect(first.location.startsWith(`${SITE_URL}/#access_token=`)).toBe(true)
      expect(first.location).toMatch(/&token_type=bearer&type=signup&sb=$/)
      const fragment = fragmentOf(first.location)
      expect(fragment.get("refresh_token")).toEqual(expect.any(String))
      expect(Number(fragment.get("expires_in"))).toBeGreaterThan(0)
      const { client } = authClient(url)
      const user = yield* call(() => client.getUser(fragment.get("access_token")!))
      expect(user.data.user).toMatchObject({ email, email_confirmed_at: expect.any(String) })
      expect((yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))).error).toBeNull()

      const second = yield* follow(url, link)
      expect(second.status).toBe(303)
      expect(second.location).toBe(
        `${SITE_URL}/#error=access_denied&error_code=otp_expired&error_description=Email+link+is+invalid+or+has+expired&sb=`
      )
    }))

  it.effect("verifyOtp with the link's token_hash confirms too", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { email, link } = yield* signUpByEmail("hash")
      const tokenHash = link.searchParams.get("token")!
      const { data, error } = yield* call(() => authClient(url).client.verifyOtp({ token_hash: tokenHash, type: "signup" }))
      expect(error).toBeNull()
      expect(data.user).toMatchObject({ email, email_confirmed_at: expect.any(String) })
      const wrongHash = yield* call(() => authClient(url).client.verifyOtp({ token_hash: tokenHash, type: "signup" }))
      expect(wrongHash.error).toMatchObject({ status: 403, code: "otp_expired", message: "Email link is invalid or has expired" })
    }))

  it.effect("five wrong codes invalidate the token: the right one then fails too", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const sql = yield* SqlClient.SqlClient
      const { code, email } = yield* signUpByEmail("guess")
      const { client } = authClient(url)
      for (let i = 0; i < 5; i++) {
        const { error } = yield* call(() => client.verifyOtp({ email, token: wrong(code), type: "signup" }))
        expect(error).toMatchObject({ status: 403, code: "otp_expired" })
      }
      const { error } = yield* call(() => client.verifyOtp({ email, token: code, type: "signup" }))
      expect(error).toMatchObject({ status: 403, code: "otp_expired" })
      const [row] = yield* sql<{ email_confirmed_at: Date | null }>`SELECT email_confirmed_at FROM auth.users WHERE email = ${email}`
      expect(row!.email_confirmed_at).toBeNull()
    }))

  it.effect("wrong codes sent all at once are each counted: the right one fails after them", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { code, email } = yield* signUpByEmail("burst")
      const guesses = Array.from({ length: 12 }, (_, i) => String((Number(code) + 1 + i) % 1_000_000).padStart(6, "0"))
      const answers = yield* Effect.all(
        guesses.map((token) => raw(url, "/verify", { body: { type: "signup", email, token } })),
        { concurrency: "unbounded" }
      )
      expect(answers.map((a) => a.status)).toEqual(guesses.map(() => 403))
      const { error } = yield* call(() => authClient(url).client.verifyOtp({ email, token: code, type: "signup" }))
      expect(error).toMatchObject({ status: 403, code: "otp_expired" })
    }))

  it.effect("four wrong codes leave the right one working", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { code, email } = yield* signUpByEmail("four")
      const { client } = authClient(url)
      for (let i = 0; i < 4; i++) {
        expect((yield* call(() => client.verifyOtp({ email, token: wrong(code), type: "signup" }))).error).not.toBeNull()
      }
      expect((yield* call(() => client.verifyOtp({ email, token: code, type: "signup" }))).error).toBeNull()
    }))

  it.effect("a code older than MAILER_OTP_EXP is otp_expired", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const sql = yield* SqlClient.SqlClient
      const { code, email } = yield* signUpByEmail("old")
      yield* sql`UPDATE auth.users SET confirmation_sent_at = now() - interval '2 days' WHERE email = ${email}`
      const { error } = yield* call(() => authClient(url).client.verifyOtp({ email, token: code, type: "signup" }))
      expect(error).toMatchObject({ status: 403, code: "otp_expired", message: "Token has expired or is invalid" })
    }))

  it.effect("a phone sign-up is confirmed with the texted code (type sms)", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const phone = uniquePhone()
      const { client } = authClient(url)
      expect((yield* call(() => client.signUp({ phone, password: PASSWORD }))).error).toBeNull()
      const [text] = yield* textsTo(phone.slice(1))
      // GoTrue's default SMS_TEMPLATE.
      expect(text!.body).toMatch(/^Your code is \d{6}$/)
      const { data, error } = yield* call(() => client.verifyOtp({ phone, token: codeInText(text!.body), type: "sms" }))
      expect(error).toBeNull()
      expect(data.user).toMatchObject({ phone: phone.slice(1), phone_confirmed_at: expect.any(String), user_metadata: { phone_verified: true } })
      expect((yield* call(() => client.signInWithPassword({ phone, password: PASSWORD }))).error).toBeNull()
    }))

  it.effect("an SMS_TEST_OTP number gets no text and verifies with its fixed code", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      expect((yield* call(() => client.signUp({ phone: `+${TEST_NUMBER}`, password: PASSWORD }))).error).toBeNull()
      expect(yield* textsTo(TEST_NUMBER)).toHaveLength(0)
      const { data, error } = yield* call(() => client.verifyOtp({ phone: `+${TEST_NUMBER}`, token: TEST_CODE, type: "sms" }))
      expect(error).toBeNull()
      expect(data.user).toMatchObject({ phone: TEST_NUMBER, phone_confirmed_at: expect.any(String) })
    }))

  it.effect("an email change needs both confirmations: the first answers the message, the second applies it", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { code, email } = yield* signUpByEmail("change")
      const { client } = authClient(url)
      const signedIn = yield* call(() => client.verifyOtp({ email, token: code, type: "signup" }))
      const bearer = signedIn.data.session!.access_token
      const newEmail = uniqueEmail("changed")
      const put = yield* raw(url, "/user", { method: "PUT", bearer, body: { email: newEmail } })
      expect(put.status).toBe(200)
      const toNew = codeIn((yield* mailTo(newEmail))[0]!)
      const toCurrent = codeIn((yield* mailTo(email)).at(-1)!)

      const first = yield* raw(url, "/verify", { body: { type: "email_change", email: newEmail, token: toNew } })
      expect(first.status).toBe(200)
      expect(first.json).toStrictEqual({
        msg: "Confirmation link accepted. Please proceed to confirm link sent to the other email",
        code: "200"
      })
      expect((yield* call(() => client.getUser(bearer))).data.user!.email).toBe(email)

      const second = yield* call(() => client.verifyOtp({ email, token: toCurrent, type: "email_change" }))
      expect(second.error).toBeNull()
      expect(second.data.session).not.toBeNull()
      expect(second.data.user).toMatchObject({ email: newEmail, email_confirmed_at: expect.any(String) })
      expect(second.data.user!.new_email).toBeUndefined()
      expect(second.data.user!.identities!.find((i) => i.provider === "email")!.identity_data).toMatchObject({ email: newEmail })
      expect((yield* call(() => client.signInWithPassword({ email: newEmail, password: PASSWORD }))).error).toBeNull()
      expect((yield* call(() => client.signInWithPassword({ email, password: PASSWORD }))).error).toMatchObject({ code: "invalid_credentials" })
    }))

  it.effect("five wrong codes for one half of an email change cancel the whole change; the other half cannot apply it", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { code, email } = yield* signUpByEmail("change-guess")
      const { client } = authClient(url)
      const bearer = (yield* call(() => client.verifyOtp({ email, token: code, type: "signup" }))).data.session!.access_token
      const newEmail = uniqueEmail("attacker")
      expect((yield* raw(url, "/user", { method: "PUT", bearer, body: { email: newEmail } })).status).toBe(200)
      const toNew = codeIn((yield* mailTo(newEmail))[0]!)
      const toCurrent = codeIn((yield* mailTo(email)).at(-1)!)
      for (let i = 0; i < 5; i++) {
        const { error } = yield* call(() => client.verifyOtp({ email, token: wrong(toCurrent), type: "email_change" }))
        expect(error).toMatchObject({ status: 403, code: "otp_expired" })
      }
      const { error } = yield* call(() => client.verifyOtp({ email: newEmail, token: toNew, type: "email_change" }))
      expect(error).toMatchObject({ status: 403, code: "otp_expired" })
      const user = (yield* call(() => client.getUser(bearer))).data.user!
      expect(user.email).toBe(email)
      expect(user.new_email).toBeUndefined()
    }))

  it.effect("a banned user is told so only with a valid code", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const sql = yield* SqlClient.SqlClient
      const { code, email } = yield* signUpByEmail("banned")
      yield* sql`UPDATE auth.users SET banned_until = now() + interval '1 day' WHERE email = ${email}`
      const { client } = authClient(url)
      expect((yield* call(() => client.verifyOtp({ email, token: wrong(code), type: "signup" }))).error)
        .toMatchObject({ status: 403, code: "otp_expired" })
      expect((yield* call(() => client.verifyOtp({ email, token: code, type: "signup" }))).error)
        .toMatchObject({ status: 403, code: "user_banned" })
    }))

  it.effect("a phone change is applied with the texted code (type phone_change)", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { code, email } = yield* signUpByEmail("phone-change")
      const { client } = authClient(url)
      const bearer = (yield* call(() => client.verifyOtp({ email, token: code, type: "signup" }))).data.session!.access_token
      const phone = uniquePhone()
      expect((yield* raw(url, "/user", { method: "PUT", bearer, body: { phone } })).status).toBe(200)
      const [text] = yield* textsTo(phone.slice(1))
      const { data, error } = yield* call(() => client.verifyOtp({ phone, token: codeInText(text!.body), type: "phone_change" }))
      expect(error).toBeNull()
      expect(data.user).toMatchObject({ phone: phone.slice(1), phone_confirmed_at: expect.any(String), email })
      expect(data.user!.identities!.map((i) => i.provider).sort()).toEqual(["email", "phone"])
    }))

  it.effect("the body rules answer validation_failed in both envelopes; unknown tokens are otp_expired", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const cases: ReadonlyArray<readonly [Record<string, unknown>, number, string, string]> = [
        [{}, 400, "validation_failed", "Verify requires a verification type"],
        [{ type: "signup" }, 400, "validation_failed", "Verify requires either a token or a token hash"],
        [{ type: "signup", token: "1", token_hash: "x" }, 400, "validation_failed", "Verify requires either a token or a token hash"],
        [{ type: "signup", token: "1" }, 400, "validation_failed", "Only an email address or phone number should be provided on verify"],
        [{ type: "signup", token: "1", email: "a@b.co", phone: "15551234567" }, 400, "validation_failed",
          "Only an email address or phone number should be provided on verify"],
        [{ type: "signup", token_hash: "x", email: "a@b.co" }, 400, "validation_failed", "Only the token_hash and type should be provided"],
        [{ type: "signup", token_hash: "x", redirect_to: SITE_URL }, 400, "validation_failed", "Only the token_hash and type should be provided"],
        [{ type: "bogus", token_hash: "x" }, 400, "validation_failed", "Unsupported verification type"],
        [{ type: "recovery", token_hash: "x" }, 403, "otp_expired", "Email link is invalid or has expired"],
        [{ type: "magiclink", token: "123456", email: "a@b.co" }, 403, "otp_expired", "Token has expired or is invalid"]
      ]
      for (const [body, status, code, message] of cases) {
        const legacy = yield* raw(url, "/verify", { body })
        expect(legacy.status, JSON.stringify(body)).toBe(status)
        expect(legacy.json).toStrictEqual(legacyError(status, code, message))
        const versioned = yield* raw(url, "/verify", { body, apiVersion: true })
        expect(versioned.status).toBe(status)
        expect(versioned.json).toStrictEqual(versionedError(code, message))
      }
      const link = yield* follow(url, new URL(`${url}/verify?type=sms&token=x`))
      expect(link).toStrictEqual({
        status: 303,
        location: `${SITE_URL}#error=access_denied&error_code=validation_failed&error_description=Unsupported+verification+type&sb=`
      })
    }))
})
