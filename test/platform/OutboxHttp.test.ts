import { networkInterfaces } from "node:os"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { isLoopback, outboxPageUrl } from "../../src/platform/http/OutboxHttp.js"
import { Outbox } from "../../src/platform/Outbox.js"
import { raw, uniqueEmail, PASSWORD } from "../auth/acceptance/AcceptanceKit.js"
import { ServerUrl, TestServer } from "../support/TestServer.js"

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

const server = TestServer({}, { host: "0.0.0.0" }).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)))

layer(server, { timeout: 120_000, excludeTestServices: true })("the outbox page", (it) => {
  const signUp = (email: string) =>
    Effect.flatMap(ServerUrl, (url) => raw(url, "/signup", { body: { email, password: PASSWORD }, apiVersion: true }))

  it.effect("lists the mail a sign-up sent, newest first, as JSON and as HTML", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const first = uniqueEmail("outbox-first")
      const second = uniqueEmail("outbox-second")
      expect((yield* signUp(first)).status).toBe(200)
      expect((yield* signUp(second)).status).toBe(200)

      const json = yield* raw(url, "/_outbox.json")
      expect(json.status).toBe(200)
      expect(json.headers.get("cache-control")).toBe("no-store")
      const recipients = (json.json.messages as Array<{ to: string }>).map((m) => m.to)
      expect(recipients.indexOf(second)).toBeLessThan(recipients.indexOf(first))
      expect(json.json.messages[recipients.indexOf(second)]).toMatchObject({
        channel: "email",
        to: second,
        subject: "Confirm Your Signup",
        text: expect.stringMatching(/Code: \d{6}/),
        sent_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/)
      })

      const html = yield* raw(url, "/_outbox")
      expect(html.status).toBe(200)
      expect(html.headers.get("content-type")).toBe("text/html; charset=utf-8")
      expect(html.text.indexOf(second)).toBeLessThan(html.text.indexOf(first))
      // The confirmation link is in the framed mail, escaped once for the srcdoc attribute.
      expect(html.text).toContain("srcdoc=\"&lt;base target=&quot;_blank&quot;&gt;")
      expect(html.text).toContain("href=&quot;http://localhost:9999/verify?token=")
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
        text: undefined
      })
      yield* outbox.add({ channel: "sms", to: "15551234567", body: "<b>code</b> 123456 http://localhost:3000/x?a=1&b=2" })

      const page = yield* raw(url, "/_outbox")
      expect(page.text).not.toMatch(/<script|<img|<b>code/i)
      expect(page.text).toContain("&lt;img src=x onerror=alert(2)&gt;")
      expect(page.text).toContain("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;@example.com")
      expect(page.text).toContain("&lt;script&gt;alert(3)&lt;/script&gt;")
      expect(page.text).toContain(`<pre>&lt;b&gt;code&lt;/b&gt; 123456 <a href="http://localhost:3000/x?a=1&amp;b=2"`)
      const frames = page.text.match(/<iframe [^>]*>/g) ?? []
      expect(frames.length).toBeGreaterThan(0)
      for (const frame of frames) {
        expect(frame).toMatch(/ sandbox="allow-popups allow-popups-to-escape-sandbox" /)
      }
      expect(page.headers.get("content-security-policy")).toContain("script-src 'none'")

      const json = yield* raw(url, "/_outbox.json")
      expect(json.json.messages[0]).toEqual({ channel: "sms", to: "15551234567", body: "<b>code</b> 123456 http://localhost:3000/x?a=1&b=2", sent_at: expect.any(String) })
    }))

  it.effect("answers only GET", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const response = yield* raw(url, "/_outbox", { method: "POST", body: {}, apiVersion: true })
      expect(response.status).toBe(404)
      expect(response.json).toMatchObject({ code: "not_found" })
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
