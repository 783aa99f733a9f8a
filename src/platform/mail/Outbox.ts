import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * What a message is, as the code that made it knows it, handed to the Mailer or SmsSender beside the message: the
 * development outbox keeps and lists it, so nobody has to find the code in the body (a custom template may put it
 * anywhere). SMTP and the SMS providers send only the message itself.
 */
export interface MessageFacts {
  /**
   * The kind of message: signup, invite, magiclink, recovery, email_change, sms, phone_change (each the type
   * verifyOtp takes for its code), reauthentication, or mfa (a phone factor's challenge code).
   */
  readonly type: string
  /** The one-time code the message carries. */
  readonly code: string
  /** The action link a mail carries; null for a text and for a mail with a code only. */
  readonly link: string | null
  /**
   * Where the code waits to be used: the user, the users column holding its hash, and the hash it was stored as.
   * Read again when the outbox is listed, to tell whether the code is still good.
   */
  readonly pending: { readonly userId: string; readonly column: string; readonly codeHash: string }
}

/** One message as it is put in the outbox: a mail (subject, HTML and maybe a text part) or a text message. */
export type OutboxMessage =
  | {
    readonly channel: "email"
    readonly to: string
    readonly subject: string
    readonly html: string
    readonly text: string | undefined
    readonly about: MessageFacts | undefined
  }
  | { readonly channel: "sms"; readonly to: string; readonly body: string; readonly about: MessageFacts | undefined }

/** Whether a kept message's code still works, as the server sees it when the outbox is listed. */
export interface CodeState {
  /** Spent, replaced by a newer message, or cleared (too many wrong guesses, the user deleted). */
  readonly used: boolean
  /** Past its lifetime (MAILER_OTP_EXP, SMS_OTP_EXP). */
  readonly expired: boolean
}

/** A kept message as the outbox lists it; `state` is undefined for one that came without its facts. */
export type KeptMessage = OutboxMessage & { readonly sentAt: Date; readonly state: CodeState | undefined }

/** The outbox keeps this many messages, dropping the oldest: a developer reads the last few, not a history. */
export const OUTBOX_CAPACITY = 100

/**
 * The embedded default's outbox: what the development mailer and SMS sender "sent" instead of delivering, for a
 * developer to read on the outbox page rather than in the log.
 */
export class Outbox extends Context.Tag("platform/Outbox")<
  Outbox,
  {
    /** Keeps a message, stamped with the current time. */
    readonly add: (message: OutboxMessage) => Effect.Effect<void>
    /** The kept messages, newest first. */
    readonly list: Effect.Effect<ReadonlyArray<KeptMessage>>
  }
>() {}

/** Where mail and texts really go out: nothing is kept, and the list is empty. */
export const NoOutbox: Layer.Layer<Outbox> = Layer.succeed(Outbox, Outbox.of({ add: () => Effect.void, list: Effect.succeed([]) }))
