import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { notifyOrPoll } from "../../platform/sql/NotifyOrPoll.js"
import type { IamError } from "../domain/IamError.js"
import { catchSql, IamSql } from "../IamSql.js"

export interface Revocation {
  readonly id: string
  readonly kind: "access" | "family"
  readonly expiresAt: Date
}

/**
 * The denylist of access-token jtis and refresh families, stored in Postgres and mirrored in every instance's
 * memory so validating a token costs no query. An instance learns of another's revocations by NOTIFY at
 * once, and by re-reading the unexpired rows every AUTH_IAM_CACHE_REFRESH_INTERVAL whether or not
 * notifications arrive (the embedded database delivers none).
 *
 * The cache only grows between expiries: a revocation is never undone, so merging the database's rows into
 * it can never lose one written by this instance a moment earlier.
 */
export class Revocations extends Context.Tag("iam/Revocations")<Revocations, {
  readonly isRevoked: (ids: ReadonlyArray<string>) => Effect.Effect<boolean>
  /** Writes the rows (in the caller's transaction, if any) and notifies other instances. */
  readonly record: (revocations: ReadonlyArray<Revocation>) => Effect.Effect<void, IamError>
  /** Adds to this instance's cache; call after the transaction that recorded them committed. */
  readonly remember: (revocations: ReadonlyArray<Revocation>) => Effect.Effect<void>
}>() {
  static readonly layer: Layer.Layer<Revocations, never, SqlClient.SqlClient | IamSql | AppConfig> = Layer.scoped(
    Revocations,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { channel, listenSupported, table } = yield* IamSql
      const { iam } = yield* AppConfig
      const cache = new Map<string, number>()

      const merge = (rows: ReadonlyArray<{ readonly id: string; readonly expiresAt: number }>) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          for (const [id, expiresAt] of cache) if (expiresAt <= now) cache.delete(id)
          for (const row of rows) if (row.expiresAt > now) cache.set(row.id, row.expiresAt)
        })

      const reload = Effect.gen(function*() {
        const rows = yield* sql<{ id: string; expires_at: Date }>`
          SELECT id, expires_at FROM ${sql(table.revocations)} WHERE expires_at > now()`
        yield* merge(rows.map((r) => ({ id: r.id, expiresAt: new Date(r.expires_at).getTime() })))
      })

      yield* reload.pipe(Effect.orDie)
      yield* notifyOrPoll({
        channel: channel.revocations,
        interval: iam.cacheRefreshInterval,
        listenSupported,
        poll: reload,
        onNotify: (payload) => {
          const [id = "", expiresAt = "0"] = payload.split(" ")
          return merge([{ id, expiresAt: Number(expiresAt) }])
        },
        messages: { pollFailed: "iam: could not refresh the revocation list", listenFailed: "iam: LISTEN unavailable, relying on polling" }
      })

      const isRevoked = (ids: ReadonlyArray<string>) =>
        Effect.map(Clock.currentTimeMillis, (now) => ids.some((id) => (cache.get(id) ?? 0) > now))

      // Two statements however many tokens a logout revokes. Payloads are "<id> <expiry ms>"; ids hold no comma.
      const record = (revocations: ReadonlyArray<Revocation>) =>
        revocations.length === 0 ? Effect.void : Effect.zipRight(
          sql`INSERT INTO ${sql(table.revocations)} ${sql.insert(
            revocations.map((r) => ({ id: r.id, kind: r.kind, expires_at: r.expiresAt }))
          )} ON CONFLICT (id) DO NOTHING`,
          sql`SELECT pg_notify(${channel.revocations}, payload)
            FROM unnest(string_to_array(${revocations.map((r) => `${r.id} ${r.expiresAt.getTime()}`).join(",")}, ',')) AS payload`
        ).pipe(Effect.asVoid, catchSql, Effect.withSpan("Revocations.record"))

      const remember = (revocations: ReadonlyArray<Revocation>) =>
        merge(revocations.map((r) => ({ id: r.id, expiresAt: r.expiresAt.getTime() })))

      return { isRevoked, record, remember }
    })
  )
}
