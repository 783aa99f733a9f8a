import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { AuthConfig } from "../config/AuthConfig.js"
import { PlatformConfig } from "../config/PlatformConfig.js"
import { type HousekeepingTask, housekeepingEvery } from "../platform/process/Housekeeping.js"
import { makeHousekeepingRepo } from "../platform/sql/HousekeepingRepo.js"
import { qualifiedTables } from "../platform/sql/Tables.js"
import { ExpiredRefreshTokens } from "./sessions/ExpiredRefreshTokens.js"
import { ExpiredSessions } from "./sessions/ExpiredSessions.js"
import { AuditRetention } from "./users/AuditRetention.js"
import { ExpiredOneTimeRows } from "./users/ExpiredOneTimeRows.js"
import { FoldedRowCounts } from "./users/FoldedRowCounts.js"

/** The auth server's housekeeping tasks, each from the floor that owns its table, in the order a run takes them. */
export const authHousekeepingTasks: Effect.Effect<
  ReadonlyArray<HousekeepingTask>,
  never,
  ExpiredRefreshTokens | ExpiredSessions | ExpiredOneTimeRows | AuditRetention | FoldedRowCounts
> = Effect.gen(function*() {
  return [
    ...(yield* ExpiredRefreshTokens).tasks,
    ...(yield* ExpiredSessions).tasks,
    ...(yield* ExpiredOneTimeRows).tasks,
    ...(yield* AuditRetention).tasks,
    ...(yield* FoldedRowCounts).tasks
  ]
})

/** The services that make the tasks (each needs the config and the database). */
export const AuthHousekeepingTasksLive = Layer.mergeAll(
  ExpiredRefreshTokens.Default,
  ExpiredSessions.Default,
  ExpiredOneTimeRows.Default,
  AuditRetention.Default,
  FoldedRowCounts.Default
)

/** The housekeeping lock's name and state table for the auth tables of one DB_NAMESPACE. */
export const authHousekeepingState = Effect.flatMap(PlatformConfig, (platform) =>
  makeHousekeepingRepo(
    qualifiedTables("auth", platform.db.namespace, ["gatehouse_housekeeping"]).gatehouse_housekeeping,
    `gatehouse/housekeeping/auth/${platform.db.namespace}`
  ))

/**
 * The auth server's housekeeping, one runner per process (plan §3.3), unless HOUSEKEEPING_ENABLED is off. Every
 * process runs it; the lock lets one sweep at a time.
 */
export const AuthHousekeeping = Layer.scopedDiscard(Effect.gen(function*() {
  if (!(yield* AuthConfig).housekeeping.enabled) return
  yield* housekeepingEvery(yield* authHousekeepingTasks, yield* authHousekeepingState)
})).pipe(Layer.provide(AuthHousekeepingTasksLive))
