import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import type { HousekeepingTask } from "../../platform/process/Housekeeping.js"
import { AuditRetentionRepo } from "./AuditRetentionRepo.js"

/** Entries one statement deletes at most. */
export const AUDIT_LIMIT = 1000

/**
 * AUDIT_LOG_RETENTION: entries older than it are deleted. None (the default) is no task at all, so nothing of the
 * audit log is ever deleted unless the operator decided so; GoTrue keeps every entry.
 */
export const auditRetentionTasks = (repo: AuditRetentionRepo, retention: Option.Option<Duration.Duration>): ReadonlyArray<HousekeepingTask> =>
  Option.match(retention, {
    onNone: () => [],
    onSome: (kept) => [{
      name: "audit_log_entries",
      every: Duration.minutes(10),
      batch: (now: Date) =>
        Effect.map(repo.deleteBefore(new Date(now.getTime() - Duration.toMillis(kept)), AUDIT_LIMIT), (deleted) => ({
          deleted,
          done: deleted < AUDIT_LIMIT,
          resumeAfter: null
        }))
    }]
  })

export class AuditRetention extends Effect.Service<AuditRetention>()("auth/AuditRetention", {
  effect: Effect.gen(function*() {
    const repo = yield* AuditRetentionRepo
    const config = yield* AuthConfig
    return { tasks: auditRetentionTasks(repo, config.housekeeping.auditLogRetention) }
  }),
  dependencies: [AuditRetentionRepo.Default]
}) {}
