import { Clock, Effect, Ref } from "effect"

/** One message as the outbox keeps it: a mail (subject, HTML and maybe a text part) or a text message. */
export type OutboxMessage =
  | {
    readonly channel: "email"
    readonly to: string
    readonly subject: string
    readonly html: string
    readonly text: string | undefined
    readonly sentAt: Date
  }
  | { readonly channel: "sms"; readonly to: string; readonly body: string; readonly sentAt: Date }

/** The outbox keeps this many messages, dropping the oldest: a developer reads the last few, not a history. */
export const OUTBOX_CAPACITY = 100

/**
 * The embedded default's outbox: what the log-only mailer and SMS sender "sent", for a developer to read on the
 * outbox page instead of in the log. It lives in process memory, which is fine only because the embedded database
 * admits a single process (its data-directory lock): there is no second instance whose outbox this one would miss.
 */
export class Outbox extends Effect.Service<Outbox>()("platform/Outbox", {
  effect: Effect.gen(function*() {
    const messages = yield* Ref.make<ReadonlyArray<OutboxMessage>>([])

    /** Adds a message, stamped with the current time. */
    const add = (message: DistributiveOmit<OutboxMessage, "sentAt">): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Ref.update(messages, (kept) => [{ ...message, sentAt: new Date(now) } as OutboxMessage, ...kept].slice(0, OUTBOX_CAPACITY)))

    /** The kept messages, newest first. */
    const list: Effect.Effect<ReadonlyArray<OutboxMessage>> = Ref.get(messages)

    return { add, list } as const
  })
}) {}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never
