import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { type AuthTables, authTables } from "../AuthTables.js"
import {
  type DoctorFinding,
  GOTRUE_LEGACY_TOKEN_PATTERN,
  GOTRUE_READABLE,
  type ParsedColumn,
  ROW_COUNT_TRIGGERS,
  rowCountFindings
} from "../domain/GoTrueReadable.js"
import { traced } from "../../platform/Traced.js"

/**
 * The doctor's reads: for the audit in domain/GoTrueReadable.ts, how many rows of this database GoTrue v2.196 could
 * not read. Read-only, one scan per table; only counts leave the database, never a value. The namespace is an
 * argument, not PlatformConfig: `doctor` runs, as `migrate` does, on the database settings alone.
 */
export class GoTrueReadableRepo extends Effect.Service<GoTrueReadableRepo>()("auth/GoTrueReadableRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const columnsOf = traced("GoTrueReadableRepo.columns")(function*(schema: string) {
      const rows = yield* sql<{ table_name: string; column_name: string }>`
        SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = ${schema}`
      const byTable = new Map<string, Set<string>>()
      for (const row of rows) byTable.set(row.table_name, (byTable.get(row.table_name) ?? new Set()).add(row.column_name))
      return byTable
    })

    const unparsable = (parsed: ParsedColumn) => {
      const column = sql(parsed.column)
      return parsed.values !== undefined
        ? sql`${column}::text <> ALL(string_to_array(${parsed.values.join(",")}, ','))`
        : sql`${column}::text !~ ${parsed.pattern ?? ""}`
    }

    const tableFindings = (t: AuthTables, table: (typeof GOTRUE_READABLE)[number], present: ReadonlySet<string> | undefined) =>
      Effect.gen(function*() {
        const name = t[table.table]
        if (present === undefined) return [{ _tag: "MissingTable", table: table.table }] as Array<DoctorFinding>
        const missing = [...table.required, ...table.parsed].filter((c) => !present.has(c.column))
          .map((c): DoctorFinding => ({ _tag: "MissingColumn", table: table.table, column: c.column }))
        const required = table.required.filter((c) => present.has(c.column))
        const parsed = table.parsed.filter((c) => present.has(c.column))
        const counts = [
          ...required.map((c, i) => sql`count(*) FILTER (WHERE ${sql(c.column)} IS NULL)::int AS ${sql(`n${i}`)}`),
          ...parsed.map((c, i) => sql`count(*) FILTER (WHERE ${sql(c.column)} IS NOT NULL AND ${unparsable(c)})::int AS ${sql(`p${i}`)}`)
        ]
        if (counts.length === 0) return missing
        const [row] = yield* sql<Record<string, number>>`SELECT ${sql.csv(counts)} FROM ${sql(name)}`
        return [
          ...missing,
          ...required.map((c, i): DoctorFinding => ({ _tag: "NullInRequired", table: table.table, column: c.column, rows: row![`n${i}`]!, why: c.why })),
          ...parsed.map((c, i): DoctorFinding => ({ _tag: "Unparsable", table: table.table, column: c.column, rows: row![`p${i}`]!, why: c.why }))
        ]
      })

    /**
     * Live sessions (not past not_after, of a user not deleted) that hold an unrevoked refresh token, none of them in
     * GoTrue's legacy form, and no key for GoTrue's signed form: GoTrue cannot refresh them.
     */
    const unrefreshableSessions = traced("GoTrueReadableRepo.unrefreshableSessions")(function*(
      t: AuthTables,
      now: Date,
      signedKeyColumn: boolean
    ) {
      const noSignedKey = signedKeyColumn ? sql`s.refresh_token_hmac_key IS NULL` : sql`TRUE`
      const [row] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(t.sessions)} s
        JOIN ${sql(t.users)} u ON u.id = s.user_id
        WHERE (s.not_after IS NULL OR s.not_after > ${now}) AND u.deleted_at IS NULL AND ${noSignedKey}
          AND EXISTS (SELECT 1 FROM ${sql(t.refresh_tokens)} r WHERE r.session_id = s.id AND r.revoked = false)
          AND NOT EXISTS (SELECT 1 FROM ${sql(t.refresh_tokens)} r WHERE r.session_id = s.id AND r.revoked = false
            AND r.token ~ ${GOTRUE_LEGACY_TOKEN_PATTERN})`
      return row!.n
    })

    /**
     * Migration 0024's count table and triggers: present together, and the counts equal to the rows (one count of
     * each table, which the doctor's scans already pay for).
     */
    const rowCounts = traced("GoTrueReadableRepo.rowCounts")(function*(t: AuthTables, schema: string) {
      // Not from information_schema, which lists only the columns this role was granted: a doctor run as another
      // role (GoTrue's) must not report the table missing while its triggers stand.
      const [regclass] = yield* sql<{ present: boolean }>`SELECT to_regclass(${t.gatehouse_row_counts}) IS NOT NULL AS present`
      const tablePresent = regclass?.present === true
      const bare = (qualified: string) => qualified.slice(schema.length + 1)
      const tables = { [bare(t.users)]: "users", [bare(t.audit_log_entries)]: "audit_log_entries" } as const
      const found = yield* sql<{ relname: string; tgname: string }>`
        SELECT c.relname, tg.tgname FROM pg_catalog.pg_trigger tg
        JOIN pg_catalog.pg_class c ON c.oid = tg.tgrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ${schema} AND NOT tg.tgisinternal AND tg.tgenabled <> 'D' AND tg.tgname LIKE 'gatehouse\_count\_%'`
      const triggers = found.flatMap((row) => {
        const table = tables[row.relname]
        return table === undefined ? [] : [{ table, name: row.tgname }]
      })
      const complete = (["users", "audit_log_entries"] as const).every((table) =>
        ROW_COUNT_TRIGGERS[table].every((name) => triggers.some((found) => found.table === table && found.name === name)))
      if (!tablePresent || !complete) return rowCountFindings({ tablePresent, triggers, sums: [] })
      const rows = yield* sql<{ users_counted: string; users_actual: string; audit_counted: string; audit_actual: string }>`SELECT
        (SELECT coalesce(sum(n), 0) FROM ${sql(t.gatehouse_row_counts)} WHERE tbl = 'users')::text AS users_counted,
        (SELECT count(*) FROM ${sql(t.users)} WHERE aud IS NOT NULL)::text AS users_actual,
        (SELECT coalesce(sum(n), 0) FROM ${sql(t.gatehouse_row_counts)} WHERE tbl = 'audit_log_entries')::text AS audit_counted,
        (SELECT count(*) FROM ${sql(t.audit_log_entries)})::text AS audit_actual`.pipe(
        // A role that may not read the count table: the sums cannot be compared, which is no finding of its own.
        Effect.catchAll(() => Effect.succeed([]))
      )
      const row = rows[0]
      if (row === undefined) return rowCountFindings({ tablePresent, triggers, sums: [] })
      return rowCountFindings({
        tablePresent,
        triggers,
        sums: [
          { table: "users", counted: Number(row.users_counted), actual: Number(row.users_actual) },
          { table: "audit_log_entries", counted: Number(row.audit_counted), actual: Number(row.audit_actual) }
        ]
      })
    })

    /** Every finding for this database, in the audit's order, then the count table's, then the sessions note. */
    const findings = traced("GoTrueReadableRepo.findings")(function*(namespace: string, now: Date) {
      const t = authTables(namespace)
      const [schema] = t.users.split(".") as [string]
      const bareName = (qualified: string) => qualified.slice(schema.length + 1)
      const columns = yield* columnsOf(schema)
      const perTable = yield* Effect.forEach(GOTRUE_READABLE, (table) => tableFindings(t, table, columns.get(bareName(t[table.table]))))
      const sessionColumns = columns.get(bareName(t.sessions))
      const sessions = sessionColumns === undefined || !columns.has(bareName(t.refresh_tokens))
        ? 0
        : yield* unrefreshableSessions(t, now, sessionColumns.has("refresh_token_hmac_key"))
      // GoTrue's migrator's own table, beside its others: without it GoTrue would start by migrating from nothing.
      const history: ReadonlyArray<DoctorFinding> = columns.has(bareName(t.users).replace(/users$/, "schema_migrations"))
        ? []
        : [{ _tag: "NoGoTrueHistory" }]
      const counts = yield* rowCounts(t, schema)
      return [...history, ...perTable.flat(), ...counts, { _tag: "SessionsNotRefreshable", sessions } as DoctorFinding]
    }, Effect.orDie)

    return { findings }
  })
}) {}
