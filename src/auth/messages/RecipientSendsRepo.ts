import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import {
  admitRecipientSend,
  giveBackRecipientSend,
  type RecipientLimit,
  type RecipientSend,
  recipientRowExpiry
} from "../domain/RecipientSendWindow.js"
import type { SendChannel } from "./SendQuotaRepo.js"
import { traced } from "../../platform/Traced.js"

export interface RecipientSendsRepoShape {
  /**
   * One message of `channel` to the recipient keyed `recipient` at `nowMs` under `rule` (see admitRecipientSend):
   * counted, or refused with the wait until a slot frees and nothing changed.
   */
  readonly claim: (channel: SendChannel, recipient: string, nowMs: number, rule: RecipientLimit) => Effect.Effect<RecipientSend>
  /** Un-counts the message claimed at `atMs` that never went out. */
  readonly giveBack: (channel: SendChannel, recipient: string, atMs: number) => Effect.Effect<void>
  /** Deletes at most `limit` rows whose sends had all aged out by `beforeMs` (which changes no decision); how many. */
  readonly sweep: (beforeMs: number, limit: number) => Effect.Effect<number>
}

/**
 * Why a refusal may read no row, or a row the rule would admit: the row another instance wrote after this statement's
 * snapshot was taken (the upsert still saw and locked it) is not visible to the statement's plain read. A whole
 * period is the longest a refused message can have to wait, so that is a safe answer.
 */
const refusalOf = (sent: ReadonlyArray<number> | undefined, nowMs: number, rule: RecipientLimit): RecipientSend => {
  const seen = sent === undefined ? undefined : admitRecipientSend(sent, nowMs, rule)
  return seen !== undefined && !seen.allowed ? seen : { allowed: false, retryAfterMs: rule.periodMs }
}

// bigint[] comes back as text, "1,2,3": pg and PGlite hand int8 arrays over differently, text the same.
const sendTimes = (text: string): ReadonlyArray<number> => text === "" ? [] : text.split(",").map(Number)

/** The recipient_sends table (migration 0026): the per-recipient send windows every instance shares. */
export class RecipientSendsRepo extends Effect.Service<RecipientSendsRepo>()("auth/RecipientSendsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)

    // One statement: the upsert's row lock orders concurrent claims from any number of instances, and its WHERE is
    // admitRecipientSend's test (fewer than `limit` sends within the period), so a recipient is never sent more; a
    // refusal writes nothing and reads the row back for its Retry-After in the same round trip. The kept times are
    // the live ones and this one, so a row holds at most `limit` of them.
    const claim = traced("RecipientSendsRepo.claim")(function*(channel: SendChannel, recipient: string, nowMs: number, rule: RecipientLimit) {
      const limit = Math.floor(rule.limit)
      if (limit < 1) return admitRecipientSend([], nowMs, rule)
      const now = sql`${nowMs}::bigint`
      const since = sql`${nowMs - rule.periodMs}::bigint`
      const period = sql`${rule.periodMs}::bigint`
      const rows = yield* sql<{ readonly allowed: boolean; readonly sent: string }>`
        WITH claimed AS (
          INSERT INTO ${sql(t.recipient_sends)} AS r (channel, recipient, sent, expires_at)
          VALUES (${channel}, ${recipient}, ARRAY[${now}], ${now} + ${period})
          ON CONFLICT (channel, recipient) DO UPDATE SET
            sent = ARRAY(SELECT s FROM unnest(r.sent) AS s WHERE s > ${since} UNION ALL SELECT ${now} ORDER BY 1),
            expires_at = GREATEST((SELECT max(s) FROM unnest(r.sent) AS s), ${now}) + ${period}
          WHERE (SELECT count(*) FROM unnest(r.sent) AS s WHERE s > ${since}) < ${limit}
          RETURNING sent
        )
        SELECT true AS allowed, array_to_string(sent, ',') AS sent FROM claimed
        UNION ALL
        SELECT false AS allowed, array_to_string(sent, ',') AS sent FROM ${sql(t.recipient_sends)}
          WHERE channel = ${channel} AND recipient = ${recipient} AND NOT EXISTS (SELECT 1 FROM claimed)`
      const row = rows[0]
      const sent = row === undefined ? undefined : sendTimes(row.sent)
      return row?.allowed === true ? { allowed: true as const, sent: sent! } : refusalOf(sent, nowMs, rule)
    }, Effect.orDie)

    // One occurrence of the time, cut out by its position (PostgreSQL arrays are 1-based; out-of-range slices are
    // empty). The expiry stays: a row deleted a little later decides nothing meanwhile.
    const giveBack = traced("RecipientSendsRepo.giveBack")(function*(channel: SendChannel, recipient: string, atMs: number) {
      const at = sql`${atMs}::bigint`
      yield* sql`UPDATE ${sql(t.recipient_sends)}
        SET sent = sent[:array_position(sent, ${at}) - 1] || sent[array_position(sent, ${at}) + 1:]
        WHERE channel = ${channel} AND recipient = ${recipient} AND array_position(sent, ${at}) IS NOT NULL`
    }, Effect.orDie)

    // Through the expires_at index, at most `limit` rows; a row a claim is updating is skipped, never waited for.
    const sweep = traced("RecipientSendsRepo.sweep")(function*(beforeMs: number, limit: number) {
      const [row] = yield* sql<{ readonly swept: number }>`
        WITH swept AS (
          DELETE FROM ${sql(t.recipient_sends)} WHERE (channel, recipient) IN (
            SELECT channel, recipient FROM ${sql(t.recipient_sends)} WHERE expires_at <= ${beforeMs}::bigint
            LIMIT ${limit} FOR UPDATE SKIP LOCKED
          ) RETURNING 1
        )
        SELECT count(*)::int AS swept FROM swept`
      return row?.swept ?? 0
    }, Effect.orDie)

    return { claim, giveBack, sweep } satisfies RecipientSendsRepoShape
  })
}) {
  /** In memory: one process's windows, for tests that need no database. */
  static readonly Test: Layer.Layer<RecipientSendsRepo> = Layer.effect(
    RecipientSendsRepo,
    Effect.map(Ref.make(new Map<string, { readonly sent: ReadonlyArray<number>; readonly expiresAt: number }>()), (rows) =>
      RecipientSendsRepo.make({
        claim: (channel, recipient, nowMs, rule) =>
          Ref.modify(rows, (map) => {
            const id = JSON.stringify([channel, recipient])
            const send = admitRecipientSend(map.get(id)?.sent ?? [], nowMs, rule)
            return [
              send,
              send.allowed ? new Map(map).set(id, { sent: send.sent, expiresAt: recipientRowExpiry(send.sent, rule.periodMs) }) : map
            ]
          }),
        giveBack: (channel, recipient, atMs) =>
          Ref.update(rows, (map) => {
            const id = JSON.stringify([channel, recipient])
            const row = map.get(id)
            return row === undefined ? map : new Map(map).set(id, { ...row, sent: giveBackRecipientSend(row.sent, atMs) })
          }),
        sweep: (beforeMs, limit) =>
          Ref.modify(rows, (map) => {
            const swept = [...map].filter(([, row]) => row.expiresAt <= beforeMs).slice(0, limit)
            const kept = new Map(map)
            for (const [id] of swept) kept.delete(id)
            return [swept.length, kept]
          })
      }))
  )
}
