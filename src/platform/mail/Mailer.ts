import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import type { NodemailerError } from "nodemailer"
import { lazyModule } from "../LazyModule.js"
import { type MessageFacts, Outbox } from "./Outbox.js"
import { traced } from "../Traced.js"

/** One outgoing email. `text` is the plain-text alternative; without it only the HTML part is sent. */
export interface Mail {
  readonly to: string
  readonly subject: string
  readonly html: string
  readonly text?: string
  /** What the mail is, for the development outbox; SMTP sends only the fields above. */
  readonly about?: MessageFacts
}

/**
 * Delivery failed. The message is built only from nodemailer's error codes and the numeric SMTP reply, never
 * from the server's reply text or the original error, so neither credentials nor anything a server echoes back
 * can reach a log line through it.
 */
export class MailerError extends Data.TaggedError("MailerError")<{
  readonly message: string
  /** nodemailer's code, e.g. ECONNECTION, ESOCKET, EAUTH, EENVELOPE. */
  readonly code: string
  /** The socket-level code behind it, e.g. ECONNREFUSED. */
  readonly originalCode?: string
  readonly responseCode?: number
  /** True when the server rejected the message for good (5xx), so retrying it is pointless. */
  readonly permanent: boolean
}> {}

export class Mailer extends Context.Tag("platform/Mailer")<
  Mailer,
  {
    readonly send: (mail: Mail) => Effect.Effect<void, MailerError>
  }
>() {}

export interface SmtpMailerOptions {
  readonly host: string
  readonly port: number
  readonly user?: string
  readonly pass?: Redacted.Redacted<string>
  /** The From address of every mail (SMTP_ADMIN_EMAIL). */
  readonly adminEmail: string
  /** The From display name; the spec says it defaults to the admin email. */
  readonly senderName?: string
  /** Implicit TLS. Defaults to true on port 465 only; other ports upgrade with STARTTLS when offered. */
  readonly secure?: boolean
}

const toMailerError = (cause: unknown): MailerError => {
  const error = (typeof cause === "object" && cause !== null ? cause : {}) as NodemailerError
  const code = typeof error.code === "string" ? error.code : "EUNKNOWN"
  const originalCode = typeof error.originalCode === "string" ? error.originalCode : undefined
  const responseCode = typeof error.responseCode === "number" ? error.responseCode : undefined
  const detail = [originalCode, responseCode === undefined ? undefined : `reply ${responseCode}`]
    .filter((part) => part !== undefined)
    .join(", ")
  return new MailerError({
    message: `SMTP delivery failed: ${code}${detail === "" ? "" : ` (${detail})`}`,
    code,
    ...(originalCode === undefined ? {} : { originalCode }),
    ...(responseCode === undefined ? {} : { responseCode }),
    permanent: error.permanent === true
  })
}

/**
 * nodemailer, imported for the first mail rather than at start-up: a server without SMTP_HOST never sends one, and
 * every process would hold its code. A failure to load is a MailerError that says so.
 */
const nodemailer = lazyModule("nodemailer", () => import("nodemailer")).pipe(
  Effect.mapError(({ message }) => new MailerError({ message, code: "EMODULE", permanent: false }))
)

/**
 * Sends through an SMTP server with a connection pool made for the first mail (nodemailer's pool connects only
 * then too) and closed with the layer.
 */
export const SmtpMailer = (options: SmtpMailerOptions): Layer.Layer<Mailer> =>
  Layer.scoped(
    Mailer,
    Effect.gen(function*() {
      let pool: ReturnType<typeof import("nodemailer").createTransport> | undefined
      yield* Effect.addFinalizer(() => Effect.sync(() => pool?.close()))
      const transportOf = Effect.map(nodemailer, ({ createTransport }) =>
        (pool ??= createTransport({
          pool: true,
          host: options.host,
          port: options.port,
          secure: options.secure ?? options.port === 465,
          // nodemailer's defaults (2 min to connect, 10 min idle) would hold a signup request far too long.
          connectionTimeout: 10_000,
          greetingTimeout: 10_000,
          socketTimeout: 30_000,
          ...(options.user === undefined
            ? {}
            : { auth: { user: options.user, pass: options.pass === undefined ? "" : Redacted.value(options.pass) } })
        })))
      const from = { name: options.senderName ?? options.adminEmail, address: options.adminEmail }

      const send = traced("Mailer.send")(function*(mail: Mail) {
        const transport = yield* transportOf
        yield* Effect.tryPromise({
          // The signal lets an interrupted request (client gone, timeout) drop the mail from the pool's queue.
          try: (signal) =>
            transport.sendMail({
              from,
              to: mail.to,
              subject: mail.subject,
              html: mail.html,
              ...(mail.text === undefined ? {} : { text: mail.text }),
              signal
            }),
          catch: toMailerError
        })
      })
      return Mailer.of({ send })
    })
  )

/**
 * The embedded default's mailer (no SMTP_HOST): each mail is kept in the Outbox, where the developer reads it, and
 * one log line says so, naming the recipient, the subject, the kind of mail and the outbox page. Never the body,
 * the code or the link: a log is copied to terminals, files and collectors the outbox never reaches.
 */
export const OutboxMailer = (pageUrl: string): Layer.Layer<Mailer, never, Outbox> =>
  Layer.effect(
    Mailer,
    Effect.map(Outbox, (outbox) =>
      Mailer.of({
        send: traced("Mailer.send")(function*(mail: Mail) {
          yield* outbox.add({ channel: "email", to: mail.to, subject: mail.subject, html: mail.html, text: mail.text, about: mail.about })
          yield* Effect.logInfo("mail not sent (no SMTP_HOST): kept in the outbox").pipe(
            Effect.annotateLogs({ to: mail.to, subject: mail.subject, ...(mail.about === undefined ? {} : { type: mail.about.type }), outbox: pageUrl })
          )
        })
      }))
  )

/** What MemoryMailer has "sent", oldest first, for tests to read. */
export class SentMail extends Effect.Service<SentMail>()("platform/SentMail", {
  effect: Effect.map(Ref.make<ReadonlyArray<Mail>>([]), (mails) => ({ mails }))
}) {}

/** Records every mail instead of sending it; provides SentMail alongside Mailer. */
export const MemoryMailer: Layer.Layer<Mailer | SentMail> = Layer.effect(
  Mailer,
  Effect.map(SentMail, ({ mails }) =>
    Mailer.of({
      send: traced("Mailer.send")(function*(mail: Mail) {
        yield* Ref.update(mails, (sent) => [...sent, mail])
      })
    })
  )
).pipe(Layer.provideMerge(SentMail.Default))
