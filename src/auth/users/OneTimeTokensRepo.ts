import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import type { OneTimeTokenType } from "../domain/OneTimeToken.js"
import { traced } from "../../platform/Traced.js"

/** A row of GoTrue's one_time_tokens (migration 0014 says what Gatehouse writes there). */
export interface OneTimeTokenRow {
  readonly id: string
  readonly user_id: string
  readonly token_type: OneTimeTokenType
  /** What the users column holds: the typed code's hash, never a Gatehouse link token. */
  readonly token_hash: string
  readonly relates_to: string
  readonly created_at: Date
}

export interface OneTimeTokensRepoShape {
  /** Writes the user's row of that type, replacing the one before (GoTrue's CreateOneTimeToken). */
  readonly put: (row: OneTimeTokenRow) => Effect.Effect<void>
  readonly find: (userId: string, type: OneTimeTokenType) => Effect.Effect<Option.Option<OneTimeTokenRow>>
  /** Deletes the user's rows of these types. */
  readonly remove: (userId: string, types: ReadonlyArray<OneTimeTokenType>) => Effect.Effect<void>
  /** Deletes every row of the user (GoTrue's ClearAllOneTimeTokensForUser). */
  readonly removeForUser: (userId: string) => Effect.Effect<void>
}

/** GoTrue's one_time_tokens table; Gatehouse writes it and never reads it to verify anything. */
export class OneTimeTokensRepo extends Effect.Service<OneTimeTokensRepo>()("auth/OneTimeTokensRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)

    // GoTrue's timestamps have no time zone and hold UTC; written and read as UTC here whatever the session's zone.
    const put = traced("OneTimeTokensRepo.put")(function*(row: OneTimeTokenRow) {
      yield* sql`INSERT INTO ${sql(t.one_time_tokens)} (id, user_id, token_type, token_hash, relates_to, created_at, updated_at)
        VALUES (${row.id}, ${row.user_id}, ${row.token_type}, ${row.token_hash}, ${row.relates_to},
          ${row.created_at}::timestamptz AT TIME ZONE 'UTC', ${row.created_at}::timestamptz AT TIME ZONE 'UTC')
        ON CONFLICT (user_id, token_type) DO UPDATE SET id = EXCLUDED.id, token_hash = EXCLUDED.token_hash,
          relates_to = EXCLUDED.relates_to, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at`
    }, Effect.orDie)

    const find = traced("OneTimeTokensRepo.find")(function*(userId: string, type: OneTimeTokenType) {
      const rows = yield* sql<OneTimeTokenRow>`SELECT id, user_id, token_type::text AS token_type, token_hash, relates_to,
          created_at AT TIME ZONE 'UTC' AS created_at
        FROM ${sql(t.one_time_tokens)} WHERE user_id = ${userId} AND token_type = ${type}`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const remove = traced("OneTimeTokensRepo.remove")(function*(userId: string, types: ReadonlyArray<OneTimeTokenType>) {
      if (types.length === 0) return
      yield* sql`DELETE FROM ${sql(t.one_time_tokens)} WHERE user_id = ${userId} AND ${sql.in("token_type", types)}`
    }, Effect.orDie)

    const removeForUser = traced("OneTimeTokensRepo.removeForUser")(function*(userId: string) {
      yield* sql`DELETE FROM ${sql(t.one_time_tokens)} WHERE user_id = ${userId}`
    }, Effect.orDie)

    return { put, find, remove, removeForUser } satisfies OneTimeTokensRepoShape
  })
}) {
  static readonly Test: Layer.Layer<OneTimeTokensRepo> = Layer.effect(
    OneTimeTokensRepo,
    Effect.map(Ref.make<ReadonlyArray<OneTimeTokenRow>>([]), (rows) => {
      const drop = (predicate: (row: OneTimeTokenRow) => boolean) => Ref.update(rows, (all) => all.filter((row) => !predicate(row)))
      return OneTimeTokensRepo.make({
        put: (row) =>
          Ref.update(rows, (all) => [...all.filter((other) => !(other.user_id === row.user_id && other.token_type === row.token_type)), row]),
        find: (userId, type) => Effect.map(Ref.get(rows), (all) => Option.fromNullable(all.find((row) => row.user_id === userId && row.token_type === type))),
        remove: (userId, types) => drop((row) => row.user_id === userId && types.includes(row.token_type)),
        removeForUser: (userId) => drop((row) => row.user_id === userId)
      })
    })
  )
}
