import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { type KeptMessage, OUTBOX_CAPACITY, Outbox, type OutboxMessage } from "../../platform/mail/Outbox.js"
import { isCodeColumn, sentCodeState } from "../domain/SentCodeState.js"
import type { UserRow } from "../domain/UserRow.js"
import { UsersRepo } from "../users/UsersRepo.js"
import { type OutboxRow, OutboxRepo } from "./OutboxRepo.js"

const toRow = (message: OutboxMessage, sentAt: Date): OutboxRow => ({
  sent_at: sentAt,
  channel: message.channel,
  recipient: message.to,
  subject: message.channel === "email" ? message.subject : null,
  html: message.channel === "email" ? message.html : null,
  body: message.channel === "email" ? message.text ?? null : message.body,
  type: message.about?.type ?? null,
  code: message.about?.code ?? null,
  link: message.about?.link ?? null,
  user_id: message.about?.pending.userId ?? null,
  token_column: message.about?.pending.column ?? null,
  code_hash: message.about?.pending.codeHash ?? null
})

/**
 * The embedded default's Outbox, kept in the database so a restart loses nothing (the last OUTBOX_CAPACITY
 * messages). Listing reads each message's user again and judges its code with sentCodeState, so the page says what
 * /verify would answer now.
 */
export const OutboxLive: Layer.Layer<Outbox, never, OutboxRepo | UsersRepo | AuthConfig> = Layer.effect(
  Outbox,
  Effect.gen(function*() {
    const repo = yield* OutboxRepo
    const users = yield* UsersRepo
    const config = yield* AuthConfig

    const add = (message: OutboxMessage): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => repo.add(toRow(message, new Date(now)), OUTBOX_CAPACITY))

    const kept = (row: OutboxRow, owners: ReadonlyMap<string, UserRow>, now: Date): KeptMessage => {
      const about = row.type === null || row.code === null || row.user_id === null || row.token_column === null || row.code_hash === null
        ? undefined
        : { type: row.type, code: row.code, link: row.link, pending: { userId: row.user_id, column: row.token_column, codeHash: row.code_hash } }
      // Only a code waiting in a users column can be judged here; an MFA code waits in its challenge.
      const state = about === undefined || !isCodeColumn(about.pending.column) ? undefined : sentCodeState({
        column: about.pending.column,
        codeHash: about.pending.codeHash,
        sentAt: row.sent_at,
        lifetime: row.channel === "email" ? config.mailer.otpExp : config.sms.otpExp
      }, owners.get(about.pending.userId), now)
      const common = { to: row.recipient, about, sentAt: row.sent_at, state }
      return row.channel === "email"
        ? { channel: "email", subject: row.subject ?? "", html: row.html ?? "", text: row.body ?? undefined, ...common }
        : { channel: "sms", body: row.body ?? "", ...common }
    }

    // A development page of at most OUTBOX_CAPACITY messages: one lookup per user they went to is cheap enough.
    const list: Effect.Effect<ReadonlyArray<KeptMessage>> = Effect.gen(function*() {
      const rows = yield* repo.list
      const now = new Date(yield* Clock.currentTimeMillis)
      const ids = [...new Set(rows.flatMap((row) => (row.user_id === null ? [] : [row.user_id])))]
      const found = yield* Effect.forEach(ids, (id) => Effect.map(users.findById(id), Option.map((user) => [id, user] as const)))
      const owners = new Map(found.flatMap(Option.toArray))
      return rows.map((row) => kept(row, owners, now))
    }).pipe(Effect.withSpan("Outbox.list"))

    return Outbox.of({ add, list })
  })
)
