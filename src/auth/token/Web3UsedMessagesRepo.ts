import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { claimOnce, deleteExpiredClaims } from "../../platform/sql/UsedOnce.js"
import { authTables } from "../AuthTables.js"
import { traced } from "../../platform/Traced.js"

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

    const claim = traced("Web3UsedMessagesRepo.claim")((digest: Uint8Array, expiresAt: Date) =>
      claimOnce(sql, t.web3_used_messages, digest, expiresAt), Effect.orDie)
    const sweep = traced("Web3UsedMessagesRepo.sweep")((now: Date, limit: number) =>
      deleteExpiredClaims(sql, t.web3_used_messages, now, limit), Effect.orDie)

    return { claim, sweep } satisfies Web3UsedMessagesRepoShape
  })
}) {}
