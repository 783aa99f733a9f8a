/**
 * Mail as a user receives it: a real Gatehouse server with AUTH_SMTP_HOST pointing at a real SMTP server in this
 * process, nodemailer's message parsed by mailparser. The configured subject and sender, the link and the code,
 * a remote template when one can be fetched, and the built-in body when it cannot.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Logger, LogLevel, Queue, type Scope } from "effect"
import { type ParsedMail, simpleParser } from "mailparser"
import { SMTPServer } from "smtp-server"
import { otpTokenHash } from "../../../src/auth/domain/OtpToken.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { PasswordHasherTest } from "../../../src/platform/PasswordHasher.js"
import { captchaFor, messagingFor, tokenSignerFor } from "../../../src/platform/PortsLive.js"
import { SecureRandom } from "../../../src/platform/SecureRandom.js"
import { AuthRoutesLive, outboxFor } from "../../../src/cli/ServerLive.js"
import { unusedPort } from "../../platform/LocalServers.js"
import { startTemplateServer } from "../messages/TemplateServer.js"
import { TestDatabase } from "../../support/TestDatabase.js"
import { testConfig } from "../../support/TestServer.js"
import { authClient, call, PASSWORD, raw, uniqueEmail } from "./AcceptanceKit.js"

/** A real SMTP server on 127.0.0.1, port 0, handing every message it accepts, parsed, to a queue. */
const startSmtpServer = Effect.gen(function*() {
  const received = yield* Queue.unbounded<ParsedMail>()
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onData(stream, _session, callback) {
      simpleParser(stream).then(
        (mail) => {
          Queue.unsafeOffer(received, mail)
          callback()
        },
        (error: Error) => callback(error)
      )
    }
  })
  const port = yield* Effect.acquireRelease(
    Effect.async<number>((resume) => {
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.server.address() as AddressInfo).port)))
    }),
    () => Effect.async<void>((resume) => server.close(() => resume(Effect.void)))
  )
  return { port, received }
})

class Delivery extends Context.Tag("test/Delivery")<Delivery, {
  readonly url: string
  readonly received: Queue.Dequeue<ParsedMail>
}>() {}

/** The mail settings of most tests here: a subject of the operator's, and the template (if any) for confirmations. */
const confirmationSettings = (template: string | undefined): Readonly<Record<string, string>> => ({
  AUTH_MAILER_SUBJECTS_CONFIRMATION: "Bitte bestätigen: Ihre Anmeldung",
  ...(template === undefined ? {} : { AUTH_MAILER_TEMPLATES_CONFIRMATION: template })
})

/** Gatehouse with its production ports for messages (SmtpMailer), the rest as in the other acceptance tests. */
const gatehouseOverSmtp = (
  templateUrl: Effect.Effect<string | undefined, never, Scope.Scope>,
  mailSettings: (template: string | undefined) => Readonly<Record<string, string>> = confirmationSettings
) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const smtp = yield* startSmtpServer
    const template = yield* templateUrl
    const config = testConfig({
      AUTH_SMTP_HOST: "127.0.0.1",
      AUTH_SMTP_PORT: String(smtp.port),
      AUTH_SMTP_ADMIN_EMAIL: "no-reply@gatehouse.test",
      AUTH_SMTP_SENDER_NAME: "Gatehouse Test",
      ...mailSettings(template)
    })
    const Url = Layer.effect(
      Delivery,
      Effect.map(HttpServer.HttpServer, (server) => ({
        url: `http://127.0.0.1:${(server.address as HttpServer.TcpAddress).port}`,
        received: smtp.received
      }))
    )
    return Layer.mergeAll(AuthRoutesLive(config), Url).pipe(
      Layer.provide(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 })),
      Layer.provide(
        Layer.mergeAll(Layer.orDie(tokenSignerFor(config)), PasswordHasherTest, messagingFor(config), SecureRandom.Live, captchaFor(config))
      ),
      Layer.provide(outboxFor(config)),
      Layer.provide(configLayer(config)),
      Layer.provide(Layer.effectDiscard(Effect.orDie(migrate({ namespace: config.db.namespace })))),
      Layer.provide(TestDatabase),
      Layer.orDie
    )
  })).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Error)))

const signUp = (email: string, metadata: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const { url } = yield* Delivery
    const { client } = authClient(url)
    const { data, error } = yield* call(() =>
      client.signUp({ email, password: PASSWORD, options: { emailRedirectTo: "http://localhost:3000/welcome", data: metadata } }))
    expect(error).toBeNull()
    // Confirmation is on: a user and no session.
    expect(data.session).toBeNull()
    expect(data.user?.email).toBe(email)
  })

const options = { timeout: 120_000, excludeTestServices: true }

// The template server is down (nothing listens on its port), so every mail has the built-in body.
layer(gatehouseOverSmtp(Effect.map(unusedPort, (port) => `http://127.0.0.1:${port}/confirmation.html`)), options)(
  "a sign-up's confirmation over SMTP, with the template server down",
  (it) => {
    it.effect("arrives from the configured sender, with the configured subject, the link and the code", () =>
      Effect.gen(function*() {
        const { received } = yield* Delivery
        const email = uniqueEmail("smtp")
        yield* signUp(email)
        const mail = yield* Queue.take(received)

        expect(mail.subject).toBe("Bitte bestätigen: Ihre Anmeldung")
        expect(mail.from?.value).toEqual([{ name: "Gatehouse Test", address: "no-reply@gatehouse.test" }])
        expect(mail.to && !Array.isArray(mail.to) ? mail.to.value.map((a) => a.address) : []).toEqual([email])

        const code = /Code: (\d{6})/.exec(mail.text ?? "")?.[1]
        expect(code).toBeDefined()
        expect(mail.html).toContain(`Or enter this code: ${code}`)
        const href = /href="([^"]+)"/.exec(typeof mail.html === "string" ? mail.html : "")?.[1]?.replaceAll("&amp;", "&")
        const link = new URL(href!)
        expect(`${link.origin}${link.pathname}`).toBe("http://localhost:9999/verify")
        // The link's token is random, not the code's hash (which anyone knowing the address could compute).
        expect(Object.fromEntries(link.searchParams)).toEqual({
          token: expect.stringMatching(/^[0-9a-f]{56}$/),
          type: "signup",
          redirect_to: "http://localhost:3000/welcome"
        })
        expect(link.searchParams.get("token")).not.toBe(otpTokenHash(email, code!))
        expect(mail.text).toContain(link.toString())
      }))

    it.effect("keeps no mail in the outbox: mail is really delivered (only texts, with no SMS provider, are kept)", () =>
      Effect.gen(function*() {
        const { url } = yield* Delivery
        yield* signUp(uniqueEmail("not-kept"))
        const outbox = yield* raw(url, "/_outbox.json")
        expect(outbox.status).toBe(200)
        expect(outbox.json.messages).toEqual([])
      }))
  }
)

layer(
  gatehouseOverSmtp(Effect.map(
    startTemplateServer({
      status: 200,
      body: `<html><body><h1>Willkommen, {{ .Email }}</h1><p><a href="{{ .ConfirmationURL }}">Bestätigen</a> ` +
        `oder Code {{ .Token }} eingeben.</p><p>{{ .SiteURL }} {{ if .Data }}kept{{ end }}</p></body></html>`
    }),
    (server) => server.url
  )),
  options
)("a sign-up's confirmation over SMTP, with a template", (it) => {
  it.effect("is the rendered template", () =>
    Effect.gen(function*() {
      const { received } = yield* Delivery
      const email = uniqueEmail("o'smtp")
      yield* signUp(email)
      const mail = yield* Queue.take(received)

      expect(mail.subject).toBe("Bitte bestätigen: Ihre Anmeldung")
      const html = typeof mail.html === "string" ? mail.html : ""
      expect(html).toContain(`<h1>Willkommen, ${email.replace("'", "&#39;")}</h1>`)
      const code = /oder Code (\d{6}) eingeben/.exec(html)?.[1]
      expect(code).toBeDefined()
      const token = /href="http:\/\/localhost:9999\/verify\?token=([0-9a-f]{56})&amp;type=signup&amp;redirect_to=http%3A%2F%2Flocalhost%3A3000%2Fwelcome"/.exec(html)?.[1]
      expect(token).toBeDefined()
      expect(token).not.toBe(otpTokenHash(email, code!))
      expect(html).toContain("<p>http://localhost:3000 {{ if .Data }}kept{{ end }}</p>")
    }))
})

layer(
  gatehouseOverSmtp(
    Effect.map(startTemplateServer({ status: 200, body: "<h1>Hallo {{ .Email }}</h1><p>Ihr Code: {{ .Token }}</p>" }), (server) => server.url),
    (template) => ({
      AUTH_MAILER_LOCALES: "en,de",
      AUTH_MAILER_SUBJECTS_CONFIRMATION_DE: "Willkommen bei Gatehouse",
      ...(template === undefined ? {} : { AUTH_MAILER_TEMPLATES_CONFIRMATION_DE: template })
    })
  ),
  options
)("localized confirmations over SMTP (MAILER_LOCALES=en,de, a German template of the operator's)", (it) => {
  it.effect("a user with user_metadata.locale=de gets the operator's German template and subject", () =>
    Effect.gen(function*() {
      const { received } = yield* Delivery
      const email = uniqueEmail("smtp-de")
      yield* signUp(email, { locale: "de" })
      const mail = yield* Queue.take(received)
      expect(mail.subject).toBe("Willkommen bei Gatehouse")
      const html = typeof mail.html === "string" ? mail.html : ""
      expect(html).toContain(`<h1>Hallo ${email}</h1>`)
      expect(html).toMatch(/<p>Ihr Code: \d{6}<\/p>/)
    }))

  it.effect("anyone else gets English, built in: the German template is German users' only", () =>
    Effect.gen(function*() {
      const { received } = yield* Delivery
      yield* signUp(uniqueEmail("smtp-en"), { locale: "fr" })
      const mail = yield* Queue.take(received)
      expect(mail.subject).toBe("Confirm Your Signup")
      expect(mail.html).toMatch(/^<h2>Confirm your signup<\/h2><p><a href="[^"]+">Follow this link<\/a><\/p><p>Or enter this code: \d{6}<\/p>/)
      expect(mail.text).toMatch(/^Confirm your signup\n\nhttp:\/\/localhost:9999\/verify\?token=[0-9a-f]{56}&type=signup&redirect_to=[^\n]+\n\nCode: \d{6}\n$/)
    }))
})
