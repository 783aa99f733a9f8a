import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { HousekeepingState, TaskState } from "../process/Housekeeping.js"

/**
 * The housekeeping lock and the tasks' saved state (a product's gatehouse_housekeeping table), as the runner's port.
 * The lock is a transaction-level advisory lock named after the product and DB_NAMESPACE, so instances of one
 * deployment exclude each other and deployments sharing a database (namespaces) do not. On the embedded database
 * (one session) it excludes nothing, and needs to: its single connection already runs one transaction at a time.
 */
export const makeHousekeepingRepo = (table: string, lockName: string): Effect.Effect<HousekeepingState, never, SqlClient.SqlClient> =>
  Effect.map(SqlClient.SqlClient, (sql): HousekeepingState => ({
    step: <A>(task: string, batch: (state: TaskState) => Effect.Effect<{ readonly state: TaskState; readonly value: A }>) =>
      sql.withTransaction(Effect.gen(function*() {
        const [lock] = yield* sql<{ readonly locked: boolean }>`SELECT pg_try_advisory_xact_lock(hashtext(${lockName})) AS locked`
        if (lock?.locked !== true) return Option.none<A>()
        const [row] = yield* sql<{ readonly resume_after: string | null; readonly last_run: Date | null }>`
          SELECT resume_after, last_run FROM ${sql(table)} WHERE task = ${task}`
        const saved: TaskState = { resumeAfter: row?.resume_after ?? null, lastRun: row?.last_run ?? null }
        const { state, value } = yield* batch(saved)
        if (row === undefined || state.resumeAfter !== saved.resumeAfter || state.lastRun !== saved.lastRun) {
          yield* sql`INSERT INTO ${sql(table)} (task, resume_after, last_run) VALUES (${task}, ${state.resumeAfter}, ${state.lastRun})
            ON CONFLICT (task) DO UPDATE SET resume_after = EXCLUDED.resume_after, last_run = EXCLUDED.last_run`
        }
        return Option.some(value)
      })).pipe(Effect.orDie)
  }))
