import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import type { TokenKind } from "../domain/LinkToken.js"
import { traced } from "../../platform/Traced.js"

/** What Gatehouse keeps beside one pending token of a user (migration 0011 says why). */
export interface PendingTokenRow {
  readonly user_id: string
  readonly token_kind: TokenKind
  /** The SHA-256 of the mailed link token; null for a texted code, which has no link. */
  readonly link_digest: string | null
  /** The users column's value when the token was issued. */
  readonly code_hash: string
  readonly created_at: Date
  readonly reclaim: boolean
  readonly signup_password: string | null
  readonly signup_data: Record<string, unknown> | null
}

export interface PendingTokensRepoShape {
  /** Records a newly issued token, replacing the user's earlier one of that kind. */
  readonly put: (row: PendingTokenRow) => Effect.Effect<void>
  readonly findByLink: (linkDigest: string) => Effect.Effect<Option.Option<PendingTokenRow>>
  readonly find: (userId: string, kind: TokenKind) => Effect.Effect<Option.Option<PendingTokenRow>>
  /** Forgets the user's tokens of these kinds (spent, or cleared from their users columns). */
  readonly remove: (userId: string, kinds: ReadonlyArray<TokenKind>) => Effect.Effect<void>
  /** Forgets every pending token of the user (a reclaimed account). */
  readonly removeForUser: (userId: string) => Effect.Effect<void>
  /** When this database began issuing link tokens: the moment migration 0011 was applied. */
  readonly linkTokensSince: Effect.Effect<Date>
}

/** The migration that created the table; its applied_at is when GoTrue's own links stopped being issued here. */
const PENDING_TOKENS_MIGRATION = 11

/** The pending_tokens table, one row per (user, kind). */
export class PendingTokensRepo extends Effect.Service<PendingTokensRepo>()("auth/PendingTokensRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)
    const since = yield* Ref.make(Option.none<Date>())

    const put = traced("PendingTokensRepo.put")(function*(row: PendingTokenRow) {
      const values = { ...row, signup_data: row.signup_data === null ? null : sql.json(row.signup_data) }
      yield* sql`INSERT INTO ${sql(t.pending_tokens)} ${sql.insert(values)}
        ON CONFLICT (user_id, token_kind) DO UPDATE SET link_digest = EXCLUDED.link_digest, code_hash = EXCLUDED.code_hash,
          created_at = EXCLUDED.created_at, reclaim = EXCLUDED.reclaim, signup_password = EXCLUDED.signup_password,
          signup_data = EXCLUDED.signup_data`
    }, Effect.orDie)

    const findByLink = traced("PendingTokensRepo.findByLink")(function*(linkDigest: string) {
      const rows = yield* sql<PendingTokenRow>`SELECT * FROM ${sql(t.pending_tokens)} WHERE link_digest = ${linkDigest}`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const find = traced("PendingTokensRepo.find")(function*(userId: string, kind: TokenKind) {
      const rows = yield* sql<PendingTokenRow>`SELECT * FROM ${sql(t.pending_tokens)}
        WHERE user_id = ${userId} AND token_kind = ${kind}`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const remove = traced("PendingTokensRepo.remove")(function*(userId: string, kinds: ReadonlyArray<TokenKind>) {
      if (kinds.length === 0) return
      yield* sql`DELETE FROM ${sql(t.pending_tokens)} WHERE user_id = ${userId} AND ${sql.in("token_kind", kinds)}`
    }, Effect.orDie)

    const removeForUser = traced("PendingTokensRepo.removeForUser")(function*(userId: string) {
      yield* sql`DELETE FROM ${sql(t.pending_tokens)} WHERE user_id = ${userId}`
    }, Effect.orDie)

    // Read once, on first use: the migration has run by then, and its time never changes.
    const linkTokensSince = Effect.flatMap(Ref.get(since), Option.match({
      onSome: Effect.succeed,
      onNone: () =>
        sql<{ readonly applied_at: Date }>`SELECT applied_at FROM ${sql(t.gatehouse_migrations)}
          WHERE version = ${PENDING_TOKENS_MIGRATION}`.pipe(
          Effect.flatMap((rows) =>
            rows[0] === undefined ? Effect.dieMessage("pending_tokens: migration 0011 has not been applied") : Effect.succeed(rows[0].applied_at)
          ),
          Effect.tap((at) => Ref.set(since, Option.some(at))),
          Effect.orDie
        )
    }))

    return { put, findByLink, find, remove, removeForUser, linkTokensSince } satisfies PendingTokensRepoShape
  })
}) {
  /** In memory; `linkTokensSince` is when the simulated database began issuing link tokens (default: the epoch). */
  static readonly TestSince = (linkTokensSince: Date): Layer.Layer<PendingTokensRepo> =>
    Layer.effect(
      PendingTokensRepo,
      Effect.map(Ref.make<ReadonlyArray<PendingTokenRow>>([]), (rows) => {
        const first = (predicate: (row: PendingTokenRow) => boolean) =>
          Effect.map(Ref.get(rows), (all) => Option.fromNullable(all.find(predicate)))
        return PendingTokensRepo.make({
          put: (row) =>
            Ref.update(rows, (all) => [
              ...all.filter((other) => !(other.user_id === row.user_id && other.token_kind === row.token_kind)),
              row
            ]),
          findByLink: (linkDigest) => first((row) => row.link_digest === linkDigest),
          find: (userId, kind) => first((row) => row.user_id === userId && row.token_kind === kind),
          remove: (userId, kinds) => Ref.update(rows, (all) => all.filter((row) => !(row.user_id === userId && kinds.includes(row.token_kind)))),
          removeForUser: (userId) => Ref.update(rows, (all) => all.filter((row) => row.user_id !== userId)),
          linkTokensSince: Effect.succeed(linkTokensSince)
        })
      })
    )

  static readonly Test: Layer.Layer<PendingTokensRepo> = PendingTokensRepo.TestSince(new Date(0))
}
