import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import { traced } from "../../platform/Traced.js"

/** One kept message (migration 0013). The facts columns are null for a message that came without them. */
export interface OutboxRow {
  readonly sent_at: Date
  readonly channel: "email" | "sms"
  readonly recipient: string
  /** A mail's subject; null for a text. */
  readonly subject: string | null
  /** A mail's HTML; null for a text. */
  readonly html: string | null
  /** A mail's plain-text part (null without one), or a text's body. */
  readonly body: string | null
  readonly type: string | null
  readonly code: string | null
  readonly link: string | null
  readonly user_id: string | null
  readonly token_column: string | null
  readonly code_hash: string | null
}

export interface OutboxRepoShape {
  /** Keeps a message and forgets all but the newest `capacity`. */
  readonly add: (row: OutboxRow, capacity: number) => Effect.Effect<void>
  /** The kept messages, newest first. */
  readonly list: Effect.Effect<ReadonlyArray<OutboxRow>>
}

/** The outbox table: the embedded default's kept mail and texts, in the order they were kept. */
export class OutboxRepo extends Effect.Service<OutboxRepo>()("auth/OutboxRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)

    const add = traced("OutboxRepo.add")(function*(row: OutboxRow, capacity: number) {
      yield* sql`INSERT INTO ${sql(t.outbox)} ${sql.insert({ ...row })}`
      yield* sql`DELETE FROM ${sql(t.outbox)}
        WHERE id <= (SELECT id FROM ${sql(t.outbox)} ORDER BY id DESC OFFSET ${capacity} LIMIT 1)`
    }, Effect.orDie)

    const list = sql<OutboxRow>`SELECT sent_at, channel, recipient, subject, html, body, type, code, link, user_id,
      token_column, code_hash FROM ${sql(t.outbox)} ORDER BY id DESC`.pipe(Effect.orDie, Effect.withSpan("OutboxRepo.list"))

    return { add, list } satisfies OutboxRepoShape
  })
}) {
  /** In memory, newest first. */
  static readonly Test: Layer.Layer<OutboxRepo> = Layer.effect(
    OutboxRepo,
    Effect.map(Ref.make<ReadonlyArray<OutboxRow>>([]), (rows) =>
      OutboxRepo.make({
        add: (row, capacity) => Ref.update(rows, (kept) => [row, ...kept].slice(0, capacity)),
        list: Ref.get(rows)
      }))
  )
}
