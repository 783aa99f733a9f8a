/**
 * The embedded default's send frequencies, with SMTP_MAX_FREQUENCY and SMS_MAX_FREQUENCY unset (the test servers
 * otherwise pin GoTrue's): the Supabase local stack's 1 s, and no minute between a magic link and a password reset,
 * so a developer trying the flows is never told to wait a quarter of an hour. No test waits for the clock: the
 * message before is back-dated in the database instead.
 */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, authClient, call, codeIn, mailTo, PASSWORD, raw, uniqueEmail, uniquePhone } from "./AcceptanceKit.js"

type SentAtColumn = "confirmation_sent_at" | "recovery_sent_at"

/** Moves the user's last message of that column two seconds into the past: past the 1 s window, well inside a minute. */
const backdate = (column: SentAtColumn, where: { readonly email: string } | { readonly phone: string }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [key, value] = "email" in where ? ["email", where.email] : ["phone", where.phone]
    const rows = yield* sql`UPDATE auth.users SET ${sql(column)} = ${sql(column)} - interval '2 seconds'
      WHERE ${sql(key)} = ${value} RETURNING id`
    expect(rows).toHaveLength(1)
  }).pipe(Effect.orDie)

/** Accepted, or (on a machine slow enough to let a second pass) refused with at most the 1 s window left. */
const withinOneSecond = (response: { readonly status: number; readonly json: any }) => {
  if (response.status === 200) return
  expect(response.status).toBe(429)
  expect(response.json.message).toBe("For security purposes, you can only request this after 1 seconds.")
}

acceptance({ AUTH_SMTP_MAX_FREQUENCY: "", AUTH_SMS_MAX_FREQUENCY: "", AUTH_EXTERNAL_PHONE_ENABLED: "true" })(
  "development send frequencies (embedded default)",
  (it) => {
    it.effect("resetPasswordForEmail a moment after a magic link is mailed, and so is a second magic link", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = uniqueEmail("dev-links")
        const { client } = authClient(url)
        expect((yield* call(() => client.signUp({ email, password: PASSWORD }))).error).toBeNull()
        const [confirmation] = yield* mailTo(email)
        expect((yield* call(() => client.verifyOtp({ email, token: codeIn(confirmation!), type: "signup" }))).error).toBeNull()

        expect((yield* call(() => client.signInWithOtp({ email }))).error).toBeNull()
        withinOneSecond(yield* raw(url, "/recover", { body: { email }, apiVersion: true }))
        yield* backdate("recovery_sent_at", { email })
        expect(yield* call(() => client.resetPasswordForEmail(email))).toEqual({ data: {}, error: null })
        yield* backdate("recovery_sent_at", { email })
        expect((yield* call(() => client.signInWithOtp({ email }))).error).toBeNull()
        const subjects = (yield* mailTo(email)).map((mail) => mail.subject)
        expect(subjects.at(-1)).toBe("Your Magic Link")
        expect(subjects).toContain("Reset Your Password")
      }))

    it.effect("a confirmation is mailed again, and a repeated sign-up answered, a moment after the first", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const email = uniqueEmail("dev-resend")
        const { client } = authClient(url)
        expect((yield* call(() => client.signUp({ email, password: PASSWORD }))).error).toBeNull()
        withinOneSecond(yield* raw(url, "/resend", { body: { type: "signup", email }, apiVersion: true }))
        yield* backdate("confirmation_sent_at", { email })
        expect((yield* call(() => client.resend({ type: "signup", email }))).error).toBeNull()
        yield* backdate("confirmation_sent_at", { email })
        expect((yield* call(() => client.signUp({ email, password: PASSWORD }))).error).toBeNull()
        expect((yield* mailTo(email)).length).toBeGreaterThanOrEqual(3)
      }))

    it.effect("a texted code is sent again a moment after the first", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const phone = uniquePhone()
        const { client } = authClient(url)
        expect((yield* call(() => client.signUp({ phone, password: PASSWORD }))).error).toBeNull()
        withinOneSecond(yield* raw(url, "/resend", { body: { type: "sms", phone }, apiVersion: true }))
        yield* backdate("confirmation_sent_at", { phone: phone.slice(1) })
        expect((yield* call(() => client.resend({ type: "sms", phone }))).error).toBeNull()
      }))
  }
)
