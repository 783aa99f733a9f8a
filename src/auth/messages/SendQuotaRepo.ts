import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import { claimQuota, giveBackQuota, type SendQuotaCount } from "../domain/SendQuotaWindow.js"
import { traced } from "../../platform/Traced.js"

export type SendChannel = "email" | "sms"

export interface SendQuotaRepoShape {
  /**
   * Counts one more message of `channel` in the window starting at `windowStart` (see claimQuota); false when
   * `limit` messages already went out in it, and then nothing is counted.
   */
  readonly claim: (channel: SendChannel, windowStart: Date, limit: number) => Effect.Effect<boolean>
  /** Un-counts a claimed message that never went out, if its window is still the current one. */
  readonly giveBack: (channel: SendChannel, windowStart: Date) => Effect.Effect<void>
}

/** The send_quotas table (migration 0005): the instance-wide mail and text counters every instance shares. */
export class SendQuotaRepo extends Effect.Service<SendQuotaRepo>()("auth/SendQuotaRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)

    // One statement: the row lock of the upsert orders concurrent claims from any number of instances, and the
    // WHERE refuses the one past the limit, so the count can never overshoot. claimQuota is the same rule.
    const claim = traced("SendQuotaRepo.claim")(function*(channel: SendChannel, windowStart: Date, limit: number) {
      if (limit < 1) return false
      const rows = yield* sql`INSERT INTO ${sql(t.send_quotas)} AS q (channel, window_start, sent)
        VALUES (${channel}, ${windowStart}, 1)
        ON CONFLICT (channel) DO UPDATE SET
          sent = CASE WHEN q.window_start < EXCLUDED.window_start THEN 1 ELSE q.sent + 1 END,
          window_start = GREATEST(q.window_start, EXCLUDED.window_start)
        WHERE q.window_start < EXCLUDED.window_start OR q.sent < ${Math.floor(limit)}
        RETURNING sent`
      return rows.length > 0
    }, Effect.orDie)

    const giveBack = traced("SendQuotaRepo.giveBack")(function*(channel: SendChannel, windowStart: Date) {
      yield* sql`UPDATE ${sql(t.send_quotas)} SET sent = sent - 1
        WHERE channel = ${channel} AND window_start = ${windowStart} AND sent > 0`
    }, Effect.orDie)

    return { claim, giveBack } satisfies SendQuotaRepoShape
  })
}) {
  /** In memory: one process's counters, for tests that need no database. */
  static readonly Test: Layer.Layer<SendQuotaRepo> = Layer.effect(
    SendQuotaRepo,
    Effect.map(Ref.make(new Map<SendChannel, SendQuotaCount>()), (rows) =>
      SendQuotaRepo.make({
        claim: (channel, windowStart, limit) =>
          Ref.modify(rows, (map) => {
            const next = claimQuota(map.get(channel), windowStart, Math.floor(limit))
            return next === undefined ? [false, map] : [true, new Map(map).set(channel, next)]
          }),
        giveBack: (channel, windowStart) =>
          Ref.update(rows, (map) => {
            const next = giveBackQuota(map.get(channel), windowStart)
            return next === undefined ? map : new Map(map).set(channel, next)
          })
      }))
  )
}
