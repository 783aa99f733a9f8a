import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { IamConfig } from "../../config/IamConfig.js"
import { notifyOrPoll } from "../../platform/sql/NotifyOrPoll.js"
import type { IamError } from "../domain/IamError.js"
import { IamSql } from "../IamSql.js"
import { type Revocation, RevocationsRepo, type RevokedId } from "../store/RevocationsRepo.js"

export type { Revocation } from "../store/RevocationsRepo.js"

/**
 * The denylist of access-token jtis and refresh families, stored in Postgres (RevocationsRepo) and mirrored in every
 * instance's memory so validating a token costs no query. An instance learns of another's revocations by NOTIFY at
 * once, and by re-reading the unexpired rows every AUTH_IAM_CACHE_REFRESH_INTERVAL whether or not notifications
 * arrive (the embedded database delivers none).
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
  static readonly layer: Layer.Layer<Revocations, never, RevocationsRepo | IamSql | IamConfig> = Layer.scoped(
    Revocations,
    Effect.gen(function*() {
      const repo = yield* RevocationsRepo
      const { channel, listenSupported } = yield* IamSql
      const iam = yield* IamConfig
      const cache = new Map<string, number>()

      // An entry is kept through the very millisecond it expires: a token is valid until the clock is past its exp
      // (PasetoTokens), so a revocation that ended at exp would let a revoked token through at that instant.
      const merge = (rows: ReadonlyArray<RevokedId>) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          for (const [id, expiresAt] of cache) if (expiresAt < now) cache.delete(id)
          for (const row of rows) if (row.expiresAt >= now) cache.set(row.id, row.expiresAt)
        })

      const reload = Clock.currentTimeMillis.pipe(Effect.flatMap((now) => repo.unexpired(new Date(now))), Effect.flatMap(merge))

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
        Effect.map(Clock.currentTimeMillis, (now) => ids.some((id) => (cache.get(id) ?? -1) >= now))

      const remember = (revocations: ReadonlyArray<Revocation>) =>
        merge(revocations.map((r) => ({ id: r.id, expiresAt: r.expiresAt.getTime() })))

      return { isRevoked, record: repo.record, remember }
    })
  )
}
