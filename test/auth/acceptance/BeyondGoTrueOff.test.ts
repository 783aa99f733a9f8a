/**
 * Gatehouse's features beyond GoTrue are invisible to an app that does not use them: the same supabase-js flow, run
 * against a server with every such feature switched on and against one with all of them off (the defaults), gets
 * the same answers, byte for byte once what must differ between two runs is masked (ids, tokens, times, the
 * address), and the same mail.
 */
import { expect } from "@effect/vitest"
import { randomBytes } from "node:crypto"
import { Context, Effect, Layer, Ref } from "effect"
import { AuthMessages } from "../../../src/auth/messages/AuthMessages.js"
import { type Mail, SentMail } from "../../../src/platform/mail/Mailer.js"
import { supabaseClient } from "../../support/SupabaseJs.js"
import { ServerUrl, TestServerOver } from "../../support/TestServer.js"
import { acceptance, adminJwt, call, codeIn, PASSWORD } from "./AcceptanceKit.js"

const OFF = { AUTH_MAILER_AUTOCONFIRM: "true", AUTH_RATE_LIMIT_HEADER: "X-Real-IP" }

/** Every switch of the features beyond GoTrue, on (or set), with limits no flow here reaches. */
const ON = {
  ...OFF,
  AUTH_RATE_LIMIT_EMAIL_PER_RECIPIENT: "50",
  AUTH_RATE_LIMIT_SMS_PER_RECIPIENT: "50",
  AUTH_SECURITY_PASSWORD_CHANGE_ENDS_OTHER_SESSIONS: "true",
  AUTH_MAILER_LINK_CONFIRM_PAGE: "true",
  AUTH_MAILER_LOCALES: "en,de,fr,es,pt",
  AUTH_MAILER_DEFAULT_LOCALE: "en",
  AUTH_ADMIN_CONSOLE_ENABLED: "true"
}

interface Answer {
  readonly step: string
  readonly status: number
  readonly headers: ReadonlyArray<string>
  readonly body: string
}

/**
 * What must differ between two runs, masked: JWTs, UUIDs (numbered by first appearance, so that "the same id twice"
 * still shows), times, the run's address, opaque tokens and codes. Everything else must be the same bytes.
 */
const masker = (email: string) => {
  const ids = new Map<string, string>()
  return (text: string): string =>
    text
      .replaceAll(email, "<email>")
      .replace(/eyJ[\w-]+\.[\w-]+\.[\w-]*/g, "<jwt>")
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, (id) => {
        if (!ids.has(id)) ids.set(id, `<id${ids.size}>`)
        return ids.get(id)!
      })
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?/g, "<time>")
      .replace(/"(refresh_token|expires_at)":("[^"]*"|\d+)/g, "\"$1\":<value>")
      .replace(/([?&]token=)[\w-]+/g, "$1<token>")
      .replace(/^(sb-auth-refresh-token-prefix: ).*/, "$1<prefix>")
      .replace(/\b\d{6}\b/g, "<code>")
}

/** Headers as the client got them, in order, without Date (the clock's) and the request id (random). */
const headerLines = (headers: Headers): Array<string> =>
  [...headers].filter(([name]) => name !== "date" && name !== "x-request-id" && name !== "sb-request-id").map(([name, value]) => `${name}: ${value}`)

/** The flow an everyday app runs, through supabase-js: every answer it got, and every mail sent to its user. */
const recordedFlow = (url: string, mails: Effect.Effect<ReadonlyArray<Mail>>, settle: Effect.Effect<void>) =>
  Effect.gen(function*() {
    const email = `flow-${randomBytes(4).toString("hex")}@example.com`
    const mask = masker(email)
    const answers: Array<Answer> = []
    let step = ""
    const recording: typeof fetch = async (input, init) => {
      const response = await fetch(input, init)
      const body = await response.clone().text()
      answers.push({ step, status: response.status, headers: headerLines(response.headers).map(mask), body: mask(body) })
      return response
    }
    const app = supabaseClient(url, adminJwt("anon"), {}, { fetch: recording }).auth
    const admin = supabaseClient(url, adminJwt(), {}, { fetch: recording }).auth.admin
    const run = <A>(name: string, thunk: () => Promise<A>) =>
      Effect.suspend(() => {
        step = name
        return call(thunk)
      })

    const up = yield* run("signUp", () => app.signUp({ email, password: PASSWORD, options: { data: { name: "Ada" } } }))
    yield* run("getUser", () => app.getUser())
    yield* run("updateUser data", () => app.updateUser({ data: { theme: "dark" } }))
    yield* run("refreshSession", () => app.refreshSession())
    yield* run("signOut local", () => app.signOut({ scope: "local" }))
    yield* run("wrong password", () => app.signInWithPassword({ email, password: "not-the-password" }))
    yield* run("signInWithPassword", () => app.signInWithPassword({ email, password: PASSWORD }))
    yield* run("signInWithOtp", () => app.signInWithOtp({ email }))
    yield* settle
    const otpMail = (yield* mails).filter((mail) => mail.to === email).at(-1)!
    yield* run("verifyOtp", () => app.verifyOtp({ email, token: codeIn(otpMail), type: "email" }))
    yield* run("resetPasswordForEmail", () => app.resetPasswordForEmail(email))
    yield* run("updateUser password", () => app.updateUser({ password: `${PASSWORD}-2` }))
    yield* run("getUser bad token", () => app.getUser("not-a-jwt"))
    yield* run("admin getUserById", () => admin.getUserById(up.data.user!.id))
    yield* run("admin updateUserById", () => admin.updateUserById(up.data.user!.id, { user_metadata: { plan: "pro" } }))
    yield* run("signOut global", () => app.signOut())
    yield* settle
    const sent = (yield* mails).filter((mail) => mail.to === email).map((mail) => ({
      subject: mask(mail.subject),
      html: mask(mail.html),
      text: mask(mail.text ?? "")
    }))
    return { answers, sent }
  })

acceptance(OFF)("the features beyond GoTrue, switched on, for an app that uses none of them", (it) => {
  it.scoped("answer the same bytes as with them off, and send the same mail", () =>
    Effect.gen(function*() {
      const offUrl = yield* ServerUrl
      const offMail = Ref.get((yield* SentMail).mails)
      const off = yield* recordedFlow(offUrl, offMail, (yield* AuthMessages).settled)

      const on = Layer.fresh(TestServerOver(ON))
      const context = yield* Layer.build(on)
      const onMail = Ref.get(Context.get(context, SentMail).mails)
      const onSettle = Context.get(context, AuthMessages).settled
      const onRun = yield* recordedFlow(Context.get(context, ServerUrl), onMail, onSettle)

      // The flow did what it set out to, refusals included: the reset mail comes too soon after the code's (GoTrue's
      // per-address frequency), a 429 that must not change either.
      expect(off.answers.map((answer) => `${answer.step} ${answer.status}`)).toEqual([
        "signUp 200",
        "getUser 200",
        "updateUser data 200",
        "refreshSession 200",
        "signOut local 204",
        "wrong password 400",
        "signInWithPassword 200",
        "signInWithOtp 200",
        "verifyOtp 200",
        "resetPasswordForEmail 429",
        "updateUser password 200",
        "getUser bad token 403",
        "admin getUserById 200",
        "admin updateUserById 200",
        "signOut global 204"
      ])
      expect(off.sent.map((mail) => mail.subject)).toEqual(["Your Magic Link"])
      expect(onRun.answers).toEqual(off.answers)
      expect(onRun.sent).toEqual(off.sent)
    }))
})
