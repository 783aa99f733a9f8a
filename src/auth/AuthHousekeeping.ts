import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { AuthConfig } from "../config/AuthConfig.js"
import { PlatformConfig } from "../config/PlatformConfig.js"
import { type HousekeepingTask, housekeepingEvery } from "../platform/process/Housekeeping.js"
import { makeHousekeepingRepo } from "../platform/sql/HousekeepingRepo.js"
import { qualifiedTables } from "../platform/sql/Tables.js"
import { ExpiredRateLimits } from "./limits/ExpiredRateLimits.js"
import { ExpiredRecipientSends } from "./messages/ExpiredRecipientSends.js"
import { ExpiredFactors } from "./mfa/ExpiredFactors.js"
import { ExpiredOAuthAuthorizations } from "./oauthserver/ExpiredOAuthAuthorizations.js"
import { ExpiredPasskeyChallenges } from "./passkeys/ExpiredPasskeyChallenges.js"
import { ExpiredFlows } from "./sessions/ExpiredFlows.js"
import { ExpiredRefreshTokens } from "./sessions/ExpiredRefreshTokens.js"
import { ExpiredSessions } from "./sessions/ExpiredSessions.js"
import { ExpiredSamlRecords } from "./sso/ExpiredSamlRecords.js"
import { ExpiredWeb3Messages } from "./token/ExpiredWeb3Messages.js"
import { AuditRetention } from "./users/AuditRetention.js"
import { ExpiredOneTimeRows } from "./users/ExpiredOneTimeRows.js"
import { FoldedRowCounts } from "./users/FoldedRowCounts.js"

/**
 * The auth server's housekeeping tasks, each from the floor that owns its table, in the order a run takes them. Every
 * clean-up of the auth tables is one of them: none runs on its own schedule, so AUTH_HOUSEKEEPING_ENABLED=false turns
 * them all off.
 */
export const authHousekeepingTasks: Effect.Effect<
  ReadonlyArray<HousekeepingTask>,
  never,
  | ExpiredRefreshTokens
  | ExpiredSessions
  | ExpiredOneTimeRows
  | AuditRetention
  | FoldedRowCounts
  | ExpiredRateLimits
  | ExpiredRecipientSends
  | ExpiredFlows
  | ExpiredFactors
  | ExpiredPasskeyChallenges
  | ExpiredOAuthAuthorizations
  | ExpiredWeb3Messages
  | ExpiredSamlRecords
> = Effect.gen(function*() {
  return [
    ...(yield* ExpiredRefreshTokens).tasks,
    ...(yield* ExpiredSessions).tasks,
    ...(yield* ExpiredOneTimeRows).tasks,
    ...(yield* AuditRetention).tasks,
    ...(yield* FoldedRowCounts).tasks,
    ...(yield* ExpiredRateLimits).tasks,
    ...(yield* ExpiredRecipientSends).tasks,
    ...(yield* ExpiredFlows).tasks,
    ...(yield* ExpiredFactors).tasks,
    ...(yield* ExpiredPasskeyChallenges).tasks,
    ...(yield* ExpiredOAuthAuthorizations).tasks,
    ...(yield* ExpiredWeb3Messages).tasks,
    ...(yield* ExpiredSamlRecords).tasks
  ]
})

/** The services that make the tasks (each needs the config and the database). */
export const AuthHousekeepingTasksLive = Layer.mergeAll(
  ExpiredRefreshTokens.Default,
  ExpiredSessions.Default,
  ExpiredOneTimeRows.Default,
  AuditRetention.Default,
  FoldedRowCounts.Default,
  ExpiredRateLimits.Default,
  ExpiredRecipientSends.Default,
  ExpiredFlows.Default,
  ExpiredFactors.Default,
  ExpiredPasskeyChallenges.Default,
  ExpiredOAuthAuthorizations.Default,
  ExpiredWeb3Messages.Default,
  ExpiredSamlRecords.Default
)

/** The housekeeping lock's name and state table for the auth tables of one DB_NAMESPACE. */
export const authHousekeepingState = Effect.flatMap(PlatformConfig, (platform) =>
  makeHousekeepingRepo(
    qualifiedTables("auth", platform.db.namespace, ["gatehouse_housekeeping"]).gatehouse_housekeeping,
    `gatehouse/housekeeping/auth/${platform.db.namespace}`
  ))

/**
 * The auth server's housekeeping, one runner per process (plan §3.3), unless AUTH_HOUSEKEEPING_ENABLED is off (then
 * nothing of the auth tables is swept on this process). Every process runs it; the lock lets one sweep at a time.
 */
export const AuthHousekeeping = Layer.scopedDiscard(Effect.gen(function*() {
  if (!(yield* AuthConfig).housekeeping.enabled) return
  yield* housekeepingEvery(yield* authHousekeepingTasks, yield* authHousekeepingState)
})).pipe(Layer.provide(AuthHousekeepingTasksLive))
