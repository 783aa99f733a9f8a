import { networkInterfaces } from "node:os"
import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Either, Layer, Logger, LogLevel, Schedule } from "effect"
import { parseAppConfig } from "../../src/config/AppConfig.js"
import { mailToOutbox, outboxEnabled, textsToOutbox } from "../../src/platform/PortsLive.js"
import { outboxFor } from "../../src/cli/ServerLive.js"
import { isLoopback, outboxPageUrl } from "../../src/platform/http/OutboxHttp.js"
import { Outbox } from "../../src/platform/mail/Outbox.js"
import { authClient, call, PASSWORD, raw, uniqueEmail, uniquePhone } from "../auth/acceptance/AcceptanceKit.js"
import { ServerUrl, TestServer, TestServerOver } from "../support/TestServer.js"

/*
 * The embedded default's outbox page on a real server (the test config is the embedded default: no DATABASE_URL,
 * no SMTP_HOST). It listens on every interface so that a request can also arrive from a non-loopback address.
 */

/** An address of this machine that is not loopback, if it has one. */
const externalAddress = Object.values(networkInterfaces()).flat().find((i) => i !== undefined && !i.internal && i.family === "IPv4")?.address

describe("isLoopback", () => {
  it("accepts IPv4 127/8, ::1 and their IPv4-mapped form, nothing else", () => {
    for (const address of ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"]) expect(isLoopback(address)).toBe(true)
    for (const address of ["192.0.2.2", "10.0.0.1", "::ffff:10.0.0.1", "fd00::2", "0.0.0.0", "::", "128.0.0.1", "127.0.0.1.evil"]) {
      expect(isLoopback(address)).toBe(false)
    }
  })

  it("names the page on localhost for a server listening on every interface", () => {
    expect(outboxPageUrl("0.0.0.0", 9999)).toBe("http://localhost:9999/_outbox")
    expect(outboxPageUrl("::", 9999)).toBe("http://localhost:9999/_outbox")
    expect(outboxPageUrl("127.0.0.1", 8080)).toBe("http://127.0.0.1:8080/_outbox")
    expect(outboxPageUrl("::1", 8080)).toBe("http://[::1]:8080/_outbox")
  })
})

describe("where the outbox is", () => {
  const configOf = (env: Record<string, string>) => Either.getOrThrow(parseAppConfig({ AUTH_JWT_SECRET: "a-secret-that-is-at-least-32-bytes-long", ...env })).config
  const smtp = { AUTH_SMTP_HOST: "127.0.0.1", AUTH_SMTP_PORT: "2525" }
  const twilio = {
    AUTH_SMS_PROVIDER: "twilio",
    AUTH_SMS_TWILIO_ACCOUNT_SID: "AC1",
    AUTH_SMS_TWILIO_AUTH_TOKEN: "t",
    AUTH_SMS_TWILIO_MESSAGE_SERVICE_SID: "MG1"
  }
  const production = {
    DATABASE_URL: "postgres://auth:pw@db.internal:5432/auth",
    AUTH_DB_DRIVER: "postgres",
    AUTH_SITE_URL: "https://app.example.com",
    API_EXTERNAL_URL: "https://auth.example.com",
    AUTH_SMTP_ADMIN_EMAIL: "no-reply@example.com",
    ...smtp
  }
  const where = (env: Record<string, string>) => {
    const config = configOf(env)
    return { mail: mailToOutbox(config), texts: textsToOutbox(config), page: outboxEnabled(config) }
  }

  it("holds, in the embedded default, what has no server to go to; in production nothing", () => {
    expect(where({})).toEqual({ mail: true, texts: true, page: true })
    expect(where(smtp)).toEqual({ mail: false, texts: true, page: true })
    expect(where({ ...smtp, ...twilio })).toEqual({ mail: false, texts: false, page: false })
    expect(where(twilio)).toEqual({ mail: true, texts: false, page: true })
    expect(where(production)).toEqual({ mail: false, texts: false, page: false })
    expect(where({ ...production, AUTH_EXTERNAL_PHONE_ENABLED: "true" })).toEqual({ mail: false, texts: false, page: false })
  })

  it.effect("a production server is built with no outbox: nothing added is kept", () =>
    Effect.gen(function*() {
      const outbox = yield* Outbox
      yield* outbox.add({ channel: "sms", to: "15551234567", body: "Your code is 123456", about: undefined })
      expect(yield* outbox.list).toEqual([])
      // Production's is NoOutbox, which needs neither the database nor the config its type allows for.
    }).pipe(Effect.provide(outboxFor(configOf(production)) as Layer.Layer<Outbox>)))
})

// Sends and resends without waiting (explicit frequencies of 0), with texts, listening on every interface.
const ENV = { AUTH_SMTP_MAX_FREQUENCY: "0", AUTH_SMS_MAX_FREQUENCY: "0", AUTH_EXTERNAL_PHONE_ENABLED: "true" }
const server = TestServer(ENV, { host: "0.0.0.0" }).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)))

interface Listed {
  readonly type: string | null
  readonly channel: "email" | "sms"
  readonly to: string
  readonly subject: string | null
  readonly code: string | null
  readonly link: string | null
  readonly sent_at: string
  readonly used: boolean | null
  readonly expired: boolean | null
}

/**
 * The outbox's messages to `to`, newest first, once there are `count`: a sign-up's confirmation is delivered (kept)
 * just after the answer.
 */
const keptFor = (url: string, to: string, count = 1) =>
  raw(url, "/_outbox.json").pipe(
    Effect.map((response) => (response.json.messages as ReadonlyArray<Listed>).filter((message) => message.to === to)),
    Effect.filterOrFail((messages) => messages.length >= count, () => "not yet"),
    Effect.retry(Schedule.spaced("10 millis")),
    Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error(`no ${count} messages to ${to} in the outbox`) }),
    Effect.orDie
  )

layer(server, { timeout: 120_000, excludeTestServices: true })("the outbox page", (it) => {
  const signUp = (email: string) =>
    Effect.flatMap(ServerUrl, (url) => raw(url, "/signup", { body: { email, password: PASSWORD }, apiVersion: true }))

  it.effect("lists a sign-up's mail, newest first, with its type, code, link and state, as JSON and as HTML", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const first = uniqueEmail("outbox-first")
      const second = uniqueEmail("outbox-second")
      expect((yield* signUp(first)).status).toBe(200)
      yield* keptFor(url, first)
      expect((yield* signUp(second)).status).toBe(200)
      const [mail] = yield* keptFor(url, second)

      const json = yield* raw(url, "/_outbox.json")
      expect(json.status).toBe(200)
      expect(json.headers.get("cache-control")).toBe("no-store")
      const recipients = (json.json.messages as Array<{ to: string }>).map((m) => m.to)
      expect(recipients.indexOf(second)).toBeLessThan(recipients.indexOf(first))
      expect(json.json.messages[recipients.indexOf(second)]).toEqual({
        type: "signup",
        channel: "email",
        to: second,
        subject: "Confirm Your Signup",
        code: expect.stringMatching(/^\d{6}$/),
        link: expect.stringMatching(/^http:\/\/localhost:9999\/verify\?token=[0-9a-f]{56}&type=signup&redirect_to=/),
        sent_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        used: false,
        expired: false,
        html: expect.stringContaining(mail!.code!),
        text: expect.stringContaining(`Code: ${mail!.code}`)
      })

      const html = yield* raw(url, "/_outbox")
      expect(html.status).toBe(200)
      expect(html.headers.get("content-type")).toBe("text/html; charset=utf-8")
      expect(html.text.indexOf(second)).toBeLessThan(html.text.indexOf(first))
      expect(html.text).toContain(`<b>signup</b> · Email to <b>${second}</b>`)
      expect(html.text).toContain(`Code <code>${mail!.code}</code> <span class="state">not used yet</span>`)
      expect(html.text).toContain(`<a class="link" href="${mail!.link!.replaceAll("&", "&amp;")}" target="_blank" rel="noreferrer">`)
      // The mail itself is in a frame, escaped once for the srcdoc attribute.
      expect(html.text).toContain("srcdoc=\"&lt;base target=&quot;_blank&quot;&gt;")
      expect(html.text).toContain("href=&quot;http://localhost:9999/verify?token=")
    }))

  it.effect("says a code is used once verified or replaced by a newer one, and expired past its lifetime", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const verified = uniqueEmail("outbox-verified")
      expect((yield* signUp(verified)).status).toBe(200)
      const [sent] = yield* keptFor(url, verified)
      const { client } = authClient(url)
      expect((yield* call(() => client.verifyOtp({ email: verified, token: sent!.code!, type: sent!.type as "signup" }))).error).toBeNull()
      expect(yield* keptFor(url, verified)).toMatchObject([{ type: "signup", used: true, expired: false }])

      const resent = uniqueEmail("outbox-resent")
      expect((yield* signUp(resent)).status).toBe(200)
      yield* keptFor(url, resent)
      expect((yield* call(() => client.resend({ type: "signup", email: resent }))).error).toBeNull()
      expect(yield* keptFor(url, resent, 2)).toMatchObject([{ used: false, expired: false }, { used: true, expired: false }])

      // MAILER_OTP_EXP (a day) after the confirmation was sent, as /verify counts it from confirmation_sent_at.
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE auth.users SET confirmation_sent_at = confirmation_sent_at - interval '25 hours' WHERE email = ${resent}`.pipe(
        Effect.orDie
      )
      expect(yield* keptFor(url, resent, 2)).toMatchObject([{ used: false, expired: true }, { used: true, expired: false }])
      const page = yield* raw(url, "/_outbox")
      expect(page.text).toContain("<span class=\"state spent\">expired</span>")
      expect(page.text).toContain("<span class=\"state spent\">used</span>")
    }))

  it.effect("lists a text with its type and code, and no link", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const phone = uniquePhone()
      const { client } = authClient(url)
      expect((yield* call(() => client.signUp({ phone, password: PASSWORD }))).error).toBeNull()
      const [text] = yield* keptFor(url, phone.slice(1))
      expect(text).toMatchObject({ type: "sms", channel: "sms", subject: null, code: expect.stringMatching(/^\d{6}$/), link: null, used: false, expired: false })
      expect((yield* call(() => client.verifyOtp({ phone, token: text!.code!, type: "sms" }))).error).toBeNull()
      expect(yield* keptFor(url, phone.slice(1))).toMatchObject([{ used: true }])
    }))

  it.scoped("keeps its messages in the database: a server started again over it lists them", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const email = uniqueEmail("outbox-restart")
      expect((yield* signUp(email)).status).toBe(200)
      const [before] = yield* keptFor(url, email)
      const again = Context.get(yield* Layer.build(Layer.fresh(TestServerOver(ENV))), ServerUrl)
      expect(again).not.toBe(url)
      expect(yield* keptFor(again, email)).toEqual([before])
    }))

  it.effect("escapes what it shows, and frames a mail's HTML where no script can run", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const outbox = yield* Outbox
      yield* outbox.add({
        channel: "email",
        to: "\"><script>alert(1)</script>@example.com",
        subject: "<img src=x onerror=alert(2)>",
        html: "<script>alert(3)</script><a href=\"http://localhost:9999/verify?token=t\">Confirm</a>",
        text: undefined,
        about: {
          type: "<i>signup</i>",
          code: "<b>1</b>",
          link: "javascript:alert(4)",
          pending: { userId: "00000000-0000-4000-8000-000000000000", column: "confirmation_token", codeHash: "x" }
        }
      })
      yield* outbox.add({ channel: "sms", to: "15551234567", body: "<b>code</b> 123456 http://localhost:3000/x?a=1&b=2", about: undefined })

      const page = yield* raw(url, "/_outbox")
      expect(page.text).not.toMatch(/<script|<img|<b>code|<b>1<\/b>|<i>signup|javascript:/i)
      expect(page.text).toContain("&lt;img src=x onerror=alert(2)&gt;")
      expect(page.text).toContain("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;@example.com")
      expect(page.text).toContain("&lt;script&gt;alert(3)&lt;/script&gt;")
      expect(page.text).toContain("<b>&lt;i&gt;signup&lt;/i&gt;</b> · Email")
      expect(page.text).toContain("Code <code>&lt;b&gt;1&lt;/b&gt;</code> <span class=\"state spent\">used</span></p>")
      expect(page.text).toContain(`<pre>&lt;b&gt;code&lt;/b&gt; 123456 <a href="http://localhost:3000/x?a=1&amp;b=2"`)
      const frames = page.text.match(/<iframe [^>]*>/g) ?? []
      expect(frames.length).toBeGreaterThan(0)
      for (const frame of frames) {
        expect(frame).toMatch(/ sandbox="allow-popups allow-popups-to-escape-sandbox" /)
      }
      expect(page.headers.get("content-security-policy")).toContain("script-src 'none'")

      const json = yield* raw(url, "/_outbox.json")
      expect(json.json.messages[0]).toEqual({
        type: null,
        channel: "sms",
        to: "15551234567",
        subject: null,
        code: null,
        link: null,
        sent_at: expect.any(String),
        used: null,
        expired: null,
        body: "<b>code</b> 123456 http://localhost:3000/x?a=1&b=2"
      })
    }))

  it.effect("answers only GET and HEAD: another method from this machine is a 405 naming them", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const response = yield* raw(url, "/_outbox", { method: "POST", body: {}, apiVersion: true })
      expect(response.status).toBe(405)
      expect(response.headers.get("allow")).toBe("GET, HEAD")
      expect(response.json).toEqual({ code: 405, message: "Method not allowed" })
    }))

  it.effect.skipIf(externalAddress === undefined)("is a 404, as for any unknown path, to a client that is not on this machine", () =>
    Effect.gen(function*() {
      const port = new URL(yield* ServerUrl).port
      for (const path of ["/_outbox", "/_outbox.json"]) {
        const response = yield* raw(`http://${externalAddress}:${port}`, path, { headers: { "x-forwarded-for": "127.0.0.1" }, apiVersion: true })
        expect(response.status).toBe(404)
        expect(response.json).toMatchObject({ code: "not_found" })
        expect(response.text).not.toContain("Confirm Your Signup")
      }
    }))
})
