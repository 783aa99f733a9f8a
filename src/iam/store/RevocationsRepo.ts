import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import type { IamError } from "../domain/IamError.js"
import { catchSql, IamSql } from "../IamSql.js"

/** An access token's jti (logout) or a refresh family (logout, reuse), refused until it would have expired anyway. */
export interface Revocation {
  readonly id: string
  readonly kind: "access" | "family"
  readonly expiresAt: Date
}

/** A revocation as the caches keep it: the id and its expiry in epoch milliseconds. */
export interface RevokedId {
  readonly id: string
  readonly expiresAt: number
}

/**
 * The revocations table, the denylist every instance mirrors in memory (Revocations), and its NOTIFY channel.
 * Failures are IamError already (catchSql, at the repo boundary).
 */
export class RevocationsRepo extends Effect.Service<RevocationsRepo>()("iam/RevocationsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { channel, table } = yield* IamSql

    /**
     * Writes the rows, in the caller's transaction if one is open, and announces each on the channel as
     * "<id> <expiry ms>" (ids hold no comma); a NOTIFY is delivered when the transaction commits. Two statements
     * however many tokens one call records. A revocation recorded before stays as it was.
     */
    const record = (revocations: ReadonlyArray<Revocation>): Effect.Effect<void, IamError> =>
      revocations.length === 0 ? Effect.void : Effect.zipRight(
        sql`INSERT INTO ${sql(table.revocations)} ${sql.insert(
          revocations.map((r) => ({ id: r.id, kind: r.kind, expires_at: r.expiresAt }))
        )} ON CONFLICT (id) DO NOTHING`,
        sql`SELECT pg_notify(${channel.revocations}, payload)
          FROM unnest(string_to_array(${revocations.map((r) => `${r.id} ${r.expiresAt.getTime()}`).join(",")}, ',')) AS payload`
      ).pipe(Effect.asVoid, catchSql, Effect.withSpan("RevocationsRepo.record"))

    /** Every revocation still in force at `now`: expiring at `now` or later. */
    const unexpired = (now: Date): Effect.Effect<ReadonlyArray<RevokedId>, IamError> =>
      sql<{ id: string; expires_at: Date }>`SELECT id, expires_at FROM ${sql(table.revocations)} WHERE expires_at >= ${now}`.pipe(
      Effect.map((rows) => rows.map((r) => ({ id: r.id, expiresAt: new Date(r.expires_at).getTime() }))),
      catchSql
    )

    return { record, unexpired }
  })
}) {
  /** In memory, for services tested without a database: one process, so nothing to notify. */
  static readonly Test: Layer.Layer<RevocationsRepo> = Layer.effect(
    RevocationsRepo,
    Effect.map(Ref.make<ReadonlyMap<string, Revocation>>(new Map()), (rows) =>
      RevocationsRepo.make({
        record: (revocations) =>
          Ref.update(rows, (map) => {
            const next = new Map(map)
            for (const r of revocations) if (!next.has(r.id)) next.set(r.id, r)
            return next
          }),
        unexpired: (now) =>
          Effect.map(Ref.get(rows), (map) =>
            [...map.values()].filter((r) => r.expiresAt >= now).map((r) => ({ id: r.id, expiresAt: r.expiresAt.getTime() })))
      }))
  )
}
