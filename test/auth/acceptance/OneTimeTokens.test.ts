/**
 * GoTrue's one_time_tokens kept in step with the users columns, as a database switched back to GoTrue needs them:
 * a row per pending token holding the code's hash (what GoTrue looks codes and its own links up by), never a
 * Gatehouse link token; replaced by a newer token, put back when the newer one's message never arrived, and gone
 * once the token is spent or cleared. And what a successful verification spends: the user's other pending tokens
 * of that kind, in the users columns, pending_tokens and one_time_tokens alike.
 */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { Effect, Ref } from "effect"
import { otpTokenHash } from "../../../src/auth/domain/OtpToken.js"
import { SentSms } from "../../../src/platform/sms/SmsSender.js"
import { MailOutage, ServerUrl } from "../../support/TestServer.js"
import {
  acceptance,
  adminJwt,
  authClient,
  call,
  codeIn,
  expectingErrors,
  linkIn,
  mailTo,
  PASSWORD,
  raw,
  refusedMailTo,
  settledMail,
  uniqueEmail,
  uniquePhone
} from "./AcceptanceKit.js"

interface Row {
  readonly type: string
  readonly token_hash: string
  readonly relates_to: string
}

/** The user's one_time_tokens rows, as GoTrue would read them. */
const oneTimeRows = (userId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<Row>`SELECT token_type::text AS type, token_hash, relates_to FROM auth.one_time_tokens
      WHERE user_id = ${userId} ORDER BY token_type::text`).pipe(Effect.orDie)

const pendingKinds = (userId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly token_kind: string }>`SELECT token_kind FROM auth.pending_tokens WHERE user_id = ${userId} ORDER BY token_kind`).pipe(
      Effect.map((rows) => rows.map((row) => row.token_kind)),
      Effect.orDie
    )

const userByEmail = (email: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<Record<string, any>>`SELECT * FROM auth.users WHERE email = ${email}`).pipe(Effect.map((rows) => rows[0]!), Effect.orDie)

/** GoTrue's FindUserByConfirmationToken and friends: the user whose row of `type` holds this hash. */
const goTrueFinds = (type: string, tokenHash: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly user_id: string }>`SELECT user_id FROM auth.one_time_tokens
      WHERE token_type = ${type} AND token_hash = ${tokenHash}`).pipe(Effect.map((rows) => rows.map((row) => row.user_id)), Effect.orDie)

const textsTo = (phone: string) =>
  Effect.map(Effect.flatMap(SentSms, ({ messages }) => Ref.get(messages)), (all) => all.filter((sms) => sms.to === phone))

const codeInText = (body: string): string => /(\d{6,})/.exec(body)![1]!

const wrong = (code: string): string => code.slice(0, -1) + String((Number(code.at(-1)) + 1) % 10)

/** Signs up by email (not confirmed); the address as stored, the user's id, and the mailed code and link. */
const signedUp = (tag: string, address = uniqueEmail(tag)) =>
  Effect.gen(function*() {
    const url = yield* ServerUrl
    expect((yield* call(() => authClient(url).client.signUp({ email: address, password: PASSWORD }))).error).toBeNull()
    const email = address.toLowerCase()
    const [mail] = yield* mailTo(email)
    const user = yield* userByEmail(email)
    return { email, id: user.id as string, code: codeIn(mail!), link: linkIn(mail!) }
  })

/** A confirmed user's address, id and access token. */
const signedIn = (tag: string) =>
  Effect.gen(function*() {
    const url = yield* ServerUrl
    const { code, email, id } = yield* signedUp(tag)
    const verified = yield* call(() => authClient(url).client.verifyOtp({ email, token: code, type: "signup" }))
    expect(verified.error).toBeNull()
    return { email, id, bearer: verified.data.session!.access_token }
  })

acceptance({ AUTH_EXTERNAL_PHONE_ENABLED: "true", AUTH_SMTP_MAX_FREQUENCY: "0", AUTH_SMS_MAX_FREQUENCY: "0" })("one_time_tokens", (it) => {
  it.effect("a sign-up's row holds the code's hash, where GoTrue finds it, and never the link's token; the link spends it", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { code, email, id, link } = yield* signedUp("ott", uniqueEmail("OTT-Mixed"))
      const user = yield* userByEmail(email)
      expect(yield* oneTimeRows(id)).toEqual([{ type: "confirmation_token", token_hash: user.confirmation_token, relates_to: email }])
      expect(user.confirmation_token).toBe(otpTokenHash(email, code))
      expect(yield* goTrueFinds("confirmation_token", otpTokenHash(email, code))).toEqual([id])
      const linkToken = link.searchParams.get("token")!
      expect(linkToken).not.toBe(user.confirmation_token)
      expect(yield* goTrueFinds("confirmation_token", linkToken)).toEqual([])

      const followed = yield* call(() => fetch(`${url}${link.pathname}${link.search}`, { redirect: "manual" }))
      expect(followed.headers.get("location")).toContain("#access_token=")
      expect(yield* oneTimeRows(id)).toEqual([])
      expect(yield* pendingKinds(id)).toEqual([])
    }))

  it.effect("a resend replaces the row; a mail that never arrived puts the earlier one back", () =>
    expectingErrors(Effect.gen(function*() {
      const url = yield* ServerUrl
      const outage = yield* MailOutage
      const { email, id } = yield* signedUp("ott-resend")
      const [first] = yield* oneTimeRows(id)
      expect((yield* raw(url, "/resend", { body: { type: "signup", email } })).status).toBe(200)
      yield* settledMail
      const resent = codeIn((yield* mailTo(email)).at(-1)!)
      expect(yield* oneTimeRows(id)).toEqual([{ ...first, token_hash: otpTokenHash(email, resent) }])

      yield* Ref.set(outage, true)
      const refused = yield* raw(url, "/resend", { body: { type: "signup", email } }).pipe(
        Effect.tap(() => Effect.zipRight(refusedMailTo(email), settledMail)),
        Effect.ensuring(Ref.set(outage, false))
      )
      expect(refused.status).toBe(200)
      expect(yield* oneTimeRows(id)).toEqual([{ ...first, token_hash: otpTokenHash(email, resent) }])
      expect((yield* userByEmail(email)).confirmation_token).toBe(otpTokenHash(email, resent))
    })))

  it.effect("an email change: the first confirmation spends its own half; the second, which applies it, spends both", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { bearer, email, id } = yield* signedIn("ott-change")
      const newEmail = uniqueEmail("ott-changed")
      expect((yield* raw(url, "/user", { method: "PUT", bearer, body: { email: newEmail } })).status).toBe(200)
      const toNew = codeIn((yield* mailTo(newEmail))[0]!)
      const toCurrent = codeIn((yield* mailTo(email)).at(-1)!)
      expect(yield* oneTimeRows(id)).toEqual([
        { type: "email_change_token_current", token_hash: otpTokenHash(email, toCurrent), relates_to: email },
        { type: "email_change_token_new", token_hash: otpTokenHash(newEmail, toNew), relates_to: newEmail }
      ])
      const first = yield* raw(url, "/verify", { body: { type: "email_change", email: newEmail, token: toNew } })
      expect(first.json.msg).toMatch(/^Confirmation link accepted/)
      expect((yield* oneTimeRows(id)).map((row) => row.type)).toEqual(["email_change_token_current"])
      expect(yield* pendingKinds(id)).toEqual(["email_change_current"])

      const second = yield* call(() => authClient(url).client.verifyOtp({ email, token: toCurrent, type: "email_change" }))
      expect(second.error).toBeNull()
      expect(second.data.user!.email).toBe(newEmail)
      expect(yield* oneTimeRows(id)).toEqual([])
      expect(yield* pendingKinds(id)).toEqual([])
    }))

  it.effect("an `email` code spends the user's other emailed token; a `signup` code leaves the recovery code alone", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      const withBoth = (tag: string) =>
        Effect.gen(function*() {
          const user = yield* signedUp(tag)
          expect((yield* raw(url, "/recover", { body: { email: user.email } })).status).toBe(200)
          yield* settledMail
          const recovery = codeIn((yield* mailTo(user.email)).at(-1)!)
          expect((yield* oneTimeRows(user.id)).map((row) => row.type)).toEqual(["confirmation_token", "recovery_token"])
          return { ...user, recovery }
        })

      const bySignup = yield* withBoth("ott-signup")
      expect((yield* call(() => client.verifyOtp({ email: bySignup.email, token: bySignup.code, type: "signup" }))).error).toBeNull()
      expect(yield* oneTimeRows(bySignup.id)).toEqual([
        { type: "recovery_token", token_hash: otpTokenHash(bySignup.email, bySignup.recovery), relates_to: bySignup.email }
      ])
      expect((yield* call(() => client.verifyOtp({ email: bySignup.email, token: bySignup.recovery, type: "recovery" }))).error).toBeNull()

      const byEmail = yield* withBoth("ott-email")
      expect((yield* call(() => client.verifyOtp({ email: byEmail.email, token: byEmail.code, type: "email" }))).error).toBeNull()
      expect(yield* oneTimeRows(byEmail.id)).toEqual([])
      expect(yield* pendingKinds(byEmail.id)).toEqual([])
      expect((yield* userByEmail(byEmail.email)).recovery_token).toBe("")
      expect((yield* call(() => client.verifyOtp({ email: byEmail.email, token: byEmail.recovery, type: "recovery" }))).error)
        .toMatchObject({ status: 403, code: "otp_expired" })
    }))

  it.effect("five wrong codes clear the token, and its row", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { code, email, id } = yield* signedUp("ott-guess")
      for (let i = 0; i < 5; i++) {
        expect((yield* call(() => authClient(url).client.verifyOtp({ email, token: wrong(code), type: "signup" }))).error)
          .toMatchObject({ code: "otp_expired" })
      }
      expect(yield* oneTimeRows(id)).toEqual([])
      expect(yield* pendingKinds(id)).toEqual([])
    }))

  it.effect("a PKCE mail's row holds the prefixed hash, as the users column and GoTrue's own rows do", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("ott-pkce")
      const body = { email, password: PASSWORD, code_challenge: "c".repeat(43), code_challenge_method: "s256" }
      expect((yield* raw(url, "/signup", { body })).status).toBe(200)
      const code = codeIn((yield* mailTo(email))[0]!)
      const user = yield* userByEmail(email)
      expect(yield* oneTimeRows(user.id)).toEqual([
        { type: "confirmation_token", token_hash: `pkce_${otpTokenHash(email, code)}`, relates_to: email }
      ])
    }))

  it.effect("a phone change and a reauthentication nonce have rows; a password change spends the nonce, the code its change", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { bearer, email, id } = yield* signedIn("ott-phone")
      const phone = uniquePhone()
      expect((yield* raw(url, "/user", { method: "PUT", bearer, body: { phone } })).status).toBe(200)
      const [text] = yield* textsTo(phone.slice(1))
      const code = codeInText(text!.body)
      expect(yield* oneTimeRows(id)).toEqual([
        { type: "phone_change_token", token_hash: otpTokenHash(phone.slice(1), code), relates_to: phone.slice(1) }
      ])
      expect(yield* pendingKinds(id)).toEqual(["phone_change"])

      expect((yield* raw(url, "/reauthenticate", { bearer })).status).toBe(200)
      const nonce = codeIn((yield* mailTo(email)).at(-1)!)
      expect((yield* oneTimeRows(id)).find((row) => row.type === "reauthentication_token"))
        .toEqual({ type: "reauthentication_token", token_hash: otpTokenHash(email, nonce), relates_to: email })
      expect((yield* raw(url, "/user", { method: "PUT", bearer, body: { password: `${PASSWORD}-2` } })).status).toBe(200)
      expect((yield* oneTimeRows(id)).map((row) => row.type)).toEqual(["phone_change_token"])

      expect((yield* call(() => authClient(url).client.verifyOtp({ phone, token: code, type: "phone_change" }))).error).toBeNull()
      expect(yield* oneTimeRows(id)).toEqual([])
      expect(yield* pendingKinds(id)).toEqual([])
    }))

  it.effect("an admin's confirmation spends the pending one; a soft delete every row", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { email, id } = yield* signedUp("ott-admin")
      expect((yield* raw(url, "/recover", { body: { email } })).status).toBe(200)
      yield* settledMail
      expect((yield* raw(url, `/admin/users/${id}`, { method: "PUT", bearer: adminJwt(), body: { email_confirm: true } })).status).toBe(200)
      expect((yield* oneTimeRows(id)).map((row) => row.type)).toEqual(["recovery_token"])
      expect(yield* pendingKinds(id)).toEqual(["recovery"])
      const deleted = yield* raw(url, `/admin/users/${id}`, { method: "DELETE", bearer: adminJwt(), body: { should_soft_delete: true } })
      expect(deleted.status).toBe(200)
      expect(yield* oneTimeRows(id)).toEqual([])
      expect(yield* pendingKinds(id)).toEqual([])
    }))
})
