import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import type { TokenKind } from "../domain/LinkToken.js"
import { failuresAfterMiss, type OtpFailures } from "../domain/Verification.js"
import { traced } from "../../platform/Traced.js"


export interface OtpAttemptsRepoShape {
  /** Counts one more wrong code against the stored `tokenHash` (see failuresAfterMiss) and returns the count. */
  readonly recordMiss: (userId: string, kind: TokenKind, tokenHash: string, now: Date) => Effect.Effect<number>
  /** Forgets the counts of these kinds, after their tokens were used. */
  readonly clear: (userId: string, kinds: ReadonlyArray<TokenKind>) => Effect.Effect<void>
}

/** The otp_attempts table (migration 0003): failed verifications per user and kind of token. */
export class OtpAttemptsRepo extends Effect.Service<OtpAttemptsRepo>()("auth/OtpAttemptsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)

    // One statement, so two misses at once both count; failuresAfterMiss is the same rule in memory.
    const recordMiss = traced("OtpAttemptsRepo.recordMiss")(function*(
      userId: string,
      kind: TokenKind,
      tokenHash: string,
      now: Date
    ) {
      const [row] = yield* sql<{ readonly failures: number }>`INSERT INTO ${sql(t.otp_attempts)} AS a
        (user_id, token_kind, token_hash, failures, updated_at) VALUES (${userId}, ${kind}, ${tokenHash}, 1, ${now})
        ON CONFLICT (user_id, token_kind) DO UPDATE SET
          failures = CASE WHEN a.token_hash = EXCLUDED.token_hash THEN a.failures + 1 ELSE 1 END,
          token_hash = EXCLUDED.token_hash,
          updated_at = EXCLUDED.updated_at
        RETURNING failures`
      return row!.failures
    }, Effect.orDie)

    const clear = traced("OtpAttemptsRepo.clear")(function*(userId: string, kinds: ReadonlyArray<TokenKind>) {
      if (kinds.length === 0) return
      yield* sql`DELETE FROM ${sql(t.otp_attempts)} WHERE user_id = ${userId} AND ${sql.in("token_kind", kinds)}`
    }, Effect.orDie)

    return { recordMiss, clear } satisfies OtpAttemptsRepoShape
  })
}) {
  static readonly Test: Layer.Layer<OtpAttemptsRepo> = Layer.effect(
    OtpAttemptsRepo,
    Effect.map(Ref.make(new Map<string, OtpFailures>()), (rows) =>
      OtpAttemptsRepo.make({
        recordMiss: (userId, kind, tokenHash) =>
          Ref.modify(rows, (map) => {
            const failures = failuresAfterMiss(map.get(`${userId}/${kind}`), tokenHash)
            return [failures, new Map(map).set(`${userId}/${kind}`, { tokenHash, failures })]
          }),
        clear: (userId, kinds) =>
          Ref.update(rows, (map) => {
            const next = new Map(map)
            for (const kind of kinds) next.delete(`${userId}/${kind}`)
            return next
          })
      }))
  )
}
