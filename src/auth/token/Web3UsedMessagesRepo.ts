import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"

export interface Web3UsedMessagesRepoShape {
  /**
   * Claims a message's digest until `expiresAt`: true for the first claim, false when it was claimed before (by any
   * instance; a concurrent claim waits for the other transaction and then loses).
   */
  readonly claim: (digest: Uint8Array, expiresAt: Date) => Effect.Effect<boolean>
  /** Deletes up to `limit` records that expired before `now`; how many it deleted. */
  readonly sweep: (now: Date, limit: number) => Effect.Effect<number>
}

/** The web3_used_messages table (migration 0019): Web3 sign-in messages already accepted, by digest. */
export class Web3UsedMessagesRepo extends Effect.Service<Web3UsedMessagesRepo>()("auth/Web3UsedMessagesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)

    // An expired record is as good as none: it is taken over rather than refusing a message that could not pass the
    // time checks anyway (and keeps the claim correct between sweeps).
    const claim = Effect.fn("Web3UsedMessagesRepo.claim")(function*(digest: Uint8Array, expiresAt: Date) {
      const rows = yield* sql`INSERT INTO ${sql(t.web3_used_messages)} AS m (digest, expires_at)
        VALUES (${Buffer.from(digest)}, ${expiresAt})
        ON CONFLICT (digest) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE m.expires_at < now()
        RETURNING 1`
      return rows.length === 1
    }, Effect.orDie)

    // SKIP LOCKED: a record a sign-in is claiming right now is left to it.
    const sweep = Effect.fn("Web3UsedMessagesRepo.sweep")(function*(now: Date, limit: number) {
      const rows = yield* sql`DELETE FROM ${sql(t.web3_used_messages)} WHERE digest IN (
          SELECT digest FROM ${sql(t.web3_used_messages)} WHERE expires_at < ${now} LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ) RETURNING 1`
      return rows.length
    }, Effect.orDie)

    return { claim, sweep } satisfies Web3UsedMessagesRepoShape
  })
}) {}
