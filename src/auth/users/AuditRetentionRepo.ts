import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import { traced } from "../../platform/Traced.js"

/** The audit log's retention sweep (housekeeping), through audit_log_entries_created_at_idx. */
export class AuditRetentionRepo extends Effect.Service<AuditRetentionRepo>()("auth/AuditRetentionRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = authTables((yield* PlatformConfig).db.namespace)

    /** At most `limit` entries made before `before`, oldest first. */
    const deleteBefore = traced("AuditRetentionRepo.deleteBefore")(function*(before: Date, limit: number) {
      const rows = yield* sql`DELETE FROM ${sql(t.audit_log_entries)} WHERE id IN (
          SELECT id FROM ${sql(t.audit_log_entries)} WHERE created_at < ${before.toISOString()} ORDER BY created_at
          LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ) RETURNING 1`
      return rows.length
    }, Effect.orDie)

    return { deleteBefore }
  })
}) {}
