import { describe, expect, it, layer } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Logger, Queue, Redacted, Ref } from "effect"
import type { AddressInfo } from "node:net"
import { SMTPServer, type SMTPServerOptions } from "smtp-server"
import { type Mail, Mailer, MemoryMailer, OutboxMailer, SentMail, SmtpMailer } from "../../src/platform/mail/Mailer.js"
import { type MessageFacts, Outbox, type OutboxMessage } from "../../src/platform/mail/Outbox.js"
import { unusedPort } from "./LocalServers.js"

interface Received {
  readonly mailFrom: string
  readonly rcptTo: ReadonlyArray<string>
  /** The user the session authenticated as, if it did. */
  readonly user: unknown
  readonly headers: ReadonlyMap<string, string>
  readonly body: string
}

// Enough of RFC 5322 for these assertions: unfold continuation lines, lower-case the names.
const parseMessage = (raw: string): { headers: Map<string, string>; body: string } => {
  const split = raw.indexOf("\r\n\r\n")
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, " ")
  const headers = new Map<string, string>()
  for (const line of head.split("\r\n")) {
    const colon = line.indexOf(":")
    headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim())
  }
  return { headers, body: raw.slice(split + 4) }
}

/** A real SMTP server on 127.0.0.1, port 0, that hands every accepted message to a queue. */
const startSmtpServer = (options: Partial<SMTPServerOptions> = {}) =>
  Effect.gen(function*() {
    const received = yield* Queue.unbounded<Received>()
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS"],
      logger: false,
      onData(stream, session, callback) {
        const chunks: Array<Buffer> = []
        stream.on("data", (chunk: Buffer) => chunks.push(chunk))
        stream.on("end", () => {
          const { body, headers } = parseMessage(Buffer.concat(chunks).toString("utf8"))
          const { mailFrom, rcptTo } = session.envelope
          Queue.unsafeOffer(received, {
            mailFrom: mailFrom === false ? "" : mailFrom.address,
            rcptTo: rcptTo.map((address) => address.address),
            user: session.user,
            headers,
            body
          })
          callback()
        })
      },
      ...options
    })
    const port = yield* Effect.acquireRelease(
      Effect.async<number>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.server.address() as AddressInfo).port)))
      }),
      () => Effect.async<void>((resume) => server.close(() => resume(Effect.void)))
    )
    return { port, received }
  })

const FACTS: MessageFacts = {
  type: "magiclink",
  code: "987654",
  link: "http://localhost:8081/verify?token=token-in-link&type=magiclink",
  pending: { userId: "user-1", column: "recovery_token", codeHash: "hash" }
}

const send = (mail: Mail) => Effect.flatMap(Mailer, (mailer) => mailer.send(mail))

describe("SmtpMailer", () => {
  it.scoped("delivers the envelope, headers and both bodies to a real SMTP server", () =>
    Effect.gen(function*() {
      const smtp = yield* startSmtpServer()
      yield* send({
        to: "alice@example.com",
        subject: "Confirm your email address",
        html: "<p>Follow <a href=\"https://example.com/verify\">this link</a></p>",
        text: "Follow https://example.com/verify"
      }).pipe(
        Effect.provide(
          SmtpMailer({ host: "127.0.0.1", port: smtp.port, adminEmail: "noreply@example.com", senderName: "Gatehouse" })
        )
      )

      const mail = yield* Queue.take(smtp.received)
      expect(mail.mailFrom).toBe("noreply@example.com")
      expect(mail.rcptTo).toEqual(["alice@example.com"])
      expect(mail.user).toBeUndefined()
      expect(mail.headers.get("from")).toBe("Gatehouse <noreply@example.com>")
      expect(mail.headers.get("to")).toBe("alice@example.com")
      expect(mail.headers.get("subject")).toBe("Confirm your email address")
      expect(mail.headers.get("content-type")).toMatch(/^multipart\/alternative; boundary=/)
      expect(mail.body).toContain("Follow https://example.com/verify")
      expect(mail.body).toContain("<p>Follow <a href=\"https://example.com/verify\">this link</a></p>")
    }))

  it.scoped("sends an HTML-only mail with the admin email as the sender name by default, and nothing of its facts", () =>
    Effect.gen(function*() {
      const smtp = yield* startSmtpServer()
      yield* send({ to: "bob@example.com", subject: "Your sign-in link", html: "<p>hello</p>", about: FACTS }).pipe(
        Effect.provide(SmtpMailer({ host: "127.0.0.1", port: smtp.port, adminEmail: "noreply@example.com" }))
      )

      const mail = yield* Queue.take(smtp.received)
      expect(mail.headers.get("from")).toBe("\"noreply@example.com\" <noreply@example.com>")
      expect(mail.headers.get("content-type")).toBe("text/html; charset=utf-8")
      expect(mail.body.trim()).toBe("<p>hello</p>")
      expect([...mail.headers.values()].join("\n")).not.toMatch(/magiclink|987654|token-in-link|user-1/)
    }))

  it.scoped("authenticates with the configured user and password", () =>
    Effect.gen(function*() {
      const smtp = yield* startSmtpServer({
        authOptional: false,
        allowInsecureAuth: true,
        onAuth(auth, _session, callback) {
          return auth.username === "mailer" && auth.password === "s3cret-smtp-pass"
            ? callback(null, { user: auth.username })
            : callback(new Error("Invalid username or password"))
        }
      })
      yield* send({ to: "carol@example.com", subject: "Reset your password", html: "<p>reset</p>" }).pipe(
        Effect.provide(
          SmtpMailer({
            host: "127.0.0.1",
            port: smtp.port,
            user: "mailer",
            pass: Redacted.make("s3cret-smtp-pass"),
            adminEmail: "noreply@example.com"
          })
        )
      )

      const mail = yield* Queue.take(smtp.received)
      expect(mail.user).toBe("mailer")
      expect(mail.rcptTo).toEqual(["carol@example.com"])
    }))

  it.scoped("fails with EAUTH on a wrong password without revealing it", () =>
    Effect.gen(function*() {
      const smtp = yield* startSmtpServer({
        authOptional: false,
        allowInsecureAuth: true,
        onAuth(_auth, _session, callback) {
          callback(new Error("Invalid username or password"))
        }
      })
      const exit = yield* send({ to: "dave@example.com", subject: "s", html: "<p>x</p>" }).pipe(
        Effect.provide(
          SmtpMailer({
            host: "127.0.0.1",
            port: smtp.port,
            user: "mailer",
            pass: Redacted.make("wrong-pass-7731"),
            adminEmail: "noreply@example.com"
          })
        ),
        Effect.exit
      )

      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) {
        const error = Cause.squash(exit.cause)
        expect(error).toMatchObject({ _tag: "MailerError", code: "EAUTH", permanent: true })
        expect(Cause.pretty(exit.cause)).not.toContain("wrong-pass-7731")
        expect(JSON.stringify(error)).not.toContain("wrong-pass-7731")
      }
    }))

  it.scoped("turns a refused connection into a MailerError that does not contain the password", () =>
    Effect.gen(function*() {
      const port = yield* unusedPort
      const error = yield* send({ to: "erin@example.com", subject: "s", html: "<p>x</p>" }).pipe(
        Effect.provide(
          SmtpMailer({
            host: "127.0.0.1",
            port,
            user: "mailer",
            pass: Redacted.make("hunter2-do-not-log"),
            adminEmail: "noreply@example.com"
          })
        ),
        Effect.flip
      )

      expect(error._tag).toBe("MailerError")
      expect(error.originalCode).toBe("ECONNREFUSED")
      expect(error.permanent).toBe(false)
      expect(error.message).toMatch(/^SMTP delivery failed: E[A-Z]+ \(ECONNREFUSED\)$/)
      expect(JSON.stringify(error)).not.toContain("hunter2-do-not-log")
      expect(String(error)).not.toContain("hunter2-do-not-log")
    }))
})

describe("OutboxMailer", () => {
  it.effect("keeps each mail with its facts in the outbox, and logs one line without its body, code or link", () =>
    Effect.gen(function*() {
      const kept: Array<OutboxMessage> = []
      const lines: Array<{ message: unknown; annotations: Record<string, unknown> }> = []
      const capture = Logger.make(({ annotations, message }) => {
        lines.push({ message, annotations: Object.fromEntries(annotations) })
      })
      const outbox = Layer.succeed(Outbox, Outbox.of({ add: (message) => Effect.sync(() => void kept.push(message)), list: Effect.succeed([]) }))
      const mail = { to: "frank@example.com", subject: "Your Magic Link", html: "<p>987654 token-in-link</p>", text: "Code: 987654", about: FACTS }
      yield* send(mail).pipe(
        Effect.provide(OutboxMailer("http://localhost:8081/_outbox").pipe(Layer.provide(outbox))),
        Effect.provide(Logger.replace(Logger.defaultLogger, capture))
      )

      expect(kept).toEqual([{ channel: "email", to: mail.to, subject: mail.subject, html: mail.html, text: mail.text, about: FACTS }])
      expect(lines).toEqual([{
        message: ["mail not sent (no SMTP_HOST): kept in the outbox"],
        annotations: { to: "frank@example.com", subject: "Your Magic Link", type: "magiclink", outbox: "http://localhost:8081/_outbox" }
      }])
    }))
})

layer(MemoryMailer)("MemoryMailer", (it) => {
  it.effect("records sent mails in order for the test to read", () =>
    Effect.gen(function*() {
      yield* send({ to: "a@example.com", subject: "one", html: "<p>1</p>" })
      yield* send({ to: "b@example.com", subject: "two", html: "<p>2</p>", text: "2" })
      const { mails } = yield* SentMail
      expect(yield* Ref.get(mails)).toEqual([
        { to: "a@example.com", subject: "one", html: "<p>1</p>" },
        { to: "b@example.com", subject: "two", html: "<p>2</p>", text: "2" }
      ])
    }))
})
