import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import { type Admission, admitRequest, admitsAny, isRefilled, type RequestRate } from "../../domain/RequestRate.js"
import { traced } from "../../platform/Traced.js"

export interface RateLimitsRepoShape {
  /**
   * One request of client `key` to `route` at `nowMs` under `rate` (see admitRequest): admitted and counted, or
   * refused with nothing changed.
   */
  readonly admit: (route: string, key: string, nowMs: number, rate: RequestRate) => Effect.Effect<Admission>
  /**
   * Deletes at most `limit` of the buckets refilled by `beforeMs` (see isRefilled), which changes no decision;
   * returns how many.
   */
  readonly sweep: (beforeMs: number, limit: number) => Effect.Effect<number>
}

/**
 * Why a refusal read no row: the row another instance inserted after this statement's snapshot was taken (the
 * upsert still saw and locked it) is not visible to the statement's plain read. On one clock a refused request
 * never waits more than one interval (TAT is at most tolerance + interval ahead), so that is a safe answer.
 */
const refusalAt = (tat: number | undefined, nowMs: number, rate: RequestRate): Admission => {
  const seen = tat === undefined ? undefined : admitRequest(tat, nowMs, rate)
  return seen !== undefined && !seen.allowed ? seen : { allowed: false, retryAfterMs: rate.intervalMs }
}

/** The rate_limits table (migration 0010): the per-client request buckets every instance shares. */
export class RateLimitsRepo extends Effect.Service<RateLimitsRepo>()("auth/RateLimitsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)

    // One statement: the upsert's row lock orders concurrent requests from any number of instances, and its WHERE
    // is admitRequest's test, so a bucket can never be overdrawn; a refusal writes nothing and reads the row back
    // for its Retry-After in the same round trip.
    const admit = traced("RateLimitsRepo.admit")(function*(route: string, key: string, nowMs: number, rate: RequestRate) {
      if (!admitsAny(rate)) return admitRequest(undefined, nowMs, rate)
      const now = sql`${nowMs}::bigint`
      const interval = sql`${rate.intervalMs}::bigint`
      const rows = yield* sql<{ readonly allowed: boolean; readonly tat: string }>`
        WITH admitted AS (
          INSERT INTO ${sql(t.rate_limits)} AS r (route, key, tat) VALUES (${route}, ${key}, ${now} + ${interval})
          ON CONFLICT (route, key) DO UPDATE SET tat = GREATEST(r.tat, ${now}) + ${interval}
          WHERE GREATEST(r.tat, ${now}) - ${now} <= ${rate.toleranceMs}::bigint
          RETURNING tat
        )
        SELECT true AS allowed, tat FROM admitted
        UNION ALL
        SELECT false AS allowed, tat FROM ${sql(t.rate_limits)}
          WHERE route = ${route} AND key = ${key} AND NOT EXISTS (SELECT 1 FROM admitted)`
      const row = rows[0]
      // pg hands bigint over as a string; milliseconds since the epoch are far inside a double's exact integers.
      const tat = row === undefined ? undefined : Number(row.tat)
      return row?.allowed === true ? { allowed: true as const, tat: tat! } : refusalAt(tat, nowMs, rate)
    }, Effect.orDie)

    // By the primary key (route, key), at most `limit` rows; a bucket a request is updating is skipped, never
    // waited for (it is being refilled-from anyway).
    const sweep = traced("RateLimitsRepo.sweep")(function*(beforeMs: number, limit: number) {
      const [row] = yield* sql<{ readonly swept: number }>`
        WITH swept AS (
          DELETE FROM ${sql(t.rate_limits)} WHERE (route, key) IN (
            SELECT route, key FROM ${sql(t.rate_limits)} WHERE tat <= ${beforeMs}::bigint LIMIT ${limit} FOR UPDATE SKIP LOCKED
          ) RETURNING 1
        )
        SELECT count(*)::int AS swept FROM swept`
      return row?.swept ?? 0
    }, Effect.orDie)

    return { admit, sweep } satisfies RateLimitsRepoShape
  })
}) {
  /** In memory: one process's buckets, for tests that need no database. */
  static readonly Test: Layer.Layer<RateLimitsRepo> = Layer.effect(
    RateLimitsRepo,
    Effect.map(Ref.make(new Map<string, number>()), (rows) =>
      RateLimitsRepo.make({
        admit: (route, key, nowMs, rate) =>
          Ref.modify(rows, (map) => {
            const id = JSON.stringify([route, key])
            const admission = admitRequest(map.get(id), nowMs, rate)
            return [admission, admission.allowed ? new Map(map).set(id, admission.tat) : map]
          }),
        sweep: (beforeMs, limit) =>
          Ref.modify(rows, (map) => {
            const swept = [...map].filter(([, tat]) => isRefilled(tat, beforeMs)).slice(0, limit)
            const kept = new Map(map)
            for (const [id] of swept) kept.delete(id)
            return [swept.length, kept]
          })
      }))
  )
}
