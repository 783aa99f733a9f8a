import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import { pageSlice } from "../domain/PageSlice.js"
import { traced } from "../../platform/Traced.js"

/** GoTrue's audit payload (internal/models/audit_log_entry.go); actor_name and traits only when there are some. */
export interface AuditPayload {
  readonly actor_id: string
  readonly actor_username: string
  readonly actor_name?: unknown
  readonly actor_via_sso: boolean
  readonly action: string
  readonly log_type: string
  readonly traits?: Readonly<Record<string, unknown>>
}

/** A row of audit_log_entries. The payload is whatever was stored: GoTrue may have written rows too. */
export interface AuditLogEntry {
  readonly id: string
  readonly payload: Readonly<Record<string, unknown>>
  readonly created_at: Date
  readonly ip_address: string
}

export interface NewAuditLogEntry {
  readonly id: string
  readonly payload: AuditPayload
  readonly createdAt: Date
  readonly ipAddress: string
}

/**
 * GoTrue's `?query=<field>:<value>` scopes: `author` is the actor's username or name, `type` the log type. The
 * value matches case-insensitively anywhere in the field, as GoTrue's ILIKE '%value%' does.
 */
export type AuditField = "author" | "action" | "type"

export interface AuditQuery {
  readonly field: AuditField
  readonly value: string
}

const FIELDS: ReadonlyArray<AuditField> = ["author", "action", "type"]

/**
 * GoTrue's `query` parameter: `<field>:<value>`, where an empty value filters nothing. The message does not repeat
 * the parameter, which is the client's text and could be anything.
 */
export const parseAuditQuery = (raw: string | undefined): Either.Either<AuditQuery | undefined, string> => {
  if (raw === undefined || raw === "") return Either.right(undefined)
  const colon = raw.indexOf(":")
  const field = FIELDS.find((known) => known === raw.slice(0, colon))
  if (colon < 0 || field === undefined) return Either.left("Invalid query scope: expected author:, action: or type: and a value")
  const value = raw.slice(colon + 1)
  return Either.right(value === "" ? undefined : { field, value })
}

export interface AuditPage {
  readonly entries: ReadonlyArray<AuditLogEntry>
  /** Entries matching the query on all pages, for X-Total-Count and the last page. */
  readonly total: number
}

export interface AuditLogRepoShape {
  /** Writes the entries in one statement (a token rotation writes two). */
  readonly insert: (entries: ReadonlyArray<NewAuditLogEntry>) => Effect.Effect<void>
  /** Page `page` (from 1) of `perPage` entries matching `query`, newest first; ties go to the greater id. */
  readonly page: (page: number, perPage: number, query: AuditQuery | undefined) => Effect.Effect<AuditPage>
}

/** GoTrue writes the nil UUID as every row's instance_id (the multi-tenant column it no longer uses). */
const NIL_INSTANCE = "00000000-0000-0000-0000-000000000000"

// Constants, written into the statement as literals: the trigram indexes are on these very expressions.
const PAYLOAD_KEYS: Readonly<Record<AuditField, ReadonlyArray<string>>> = {
  author: ["actor_username", "actor_name"],
  action: ["action"],
  type: ["log_type"]
}

/** The rows of a page once `total` is known: an offset past the end reads nothing (and overflows nothing). */
const window = (page: number, perPage: number, total: number): { readonly offset: number; readonly limit: number } | undefined => {
  const offset = (page - 1) * perPage
  return offset >= total ? undefined : { offset, limit: Math.min(perPage, total - offset) }
}

const escapeLike = (value: string): string => value.replace(/[\\%_]/g, (c) => `\\${c}`)

/** The audit_log_entries table (migration 0006): append-only, read by GET /admin/audit. */
export class AuditLogRepo extends Effect.Service<AuditLogRepo>()("auth/AuditLogRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)

    const insert = traced("AuditLogRepo.insert")(function*(entries: ReadonlyArray<NewAuditLogEntry>) {
      if (entries.length === 0) return
      const rows = entries.map((entry) =>
        sql`(${NIL_INSTANCE}, ${entry.id}, ${JSON.stringify(entry.payload)}::json, ${entry.createdAt}, ${entry.ipAddress})`)
      yield* sql`INSERT INTO ${sql(t.audit_log_entries)} (instance_id, id, payload, created_at, ip_address)
        VALUES ${sql.csv(rows)}`
    }, Effect.orDie)

    const page = traced("AuditLogRepo.page")(function*(page: number, perPage: number, query: AuditQuery | undefined) {
      const offset = (page - 1) * perPage
      if (query === undefined) {
        // The table's exact count (migration 0024's triggers keep it), then the page from the nearer end of the
        // (created_at, id) index: the ids by an index-only read, then only the page's own rows. Every LIMIT and
        // OFFSET is a value the planner sees (an unknown one made it estimate, and JIT-compile, a tenth of the table).
        const [counted] = yield* sql<{ readonly total: string }>`SELECT coalesce(sum(n), 0)::text AS total
          FROM ${sql(t.gatehouse_row_counts)} WHERE tbl = 'audit_log_entries' AND part = ''`
        const total = Number(counted!.total)
        const slice = pageSlice(offset, perPage, total)
        if (slice === undefined) return { entries: [], total }
        const entries = yield* sql<AuditLogEntry>`SELECT a.id, a.payload, a.created_at, a.ip_address
          FROM (SELECT id, created_at FROM ${sql(t.audit_log_entries)}
            ORDER BY ${slice.newestFirst ? sql`created_at DESC, id DESC` : sql`created_at, id`}
            LIMIT ${slice.limit} OFFSET ${slice.offset}) k
          JOIN ${sql(t.audit_log_entries)} a ON a.id = k.id
          ORDER BY k.created_at DESC, k.id DESC`
        return { entries, total }
      }
      // Filtered, in one statement: the matches (author through its trigram indexes when pg_trgm is there), their
      // count and the page of them. A page past the end is one row of NULLs that carries the total alone.
      const pattern = `%${escapeLike(query.value)}%`
      const rows = yield* sql<AuditLogEntry & { readonly listed_total: string }>`
        WITH matched AS MATERIALIZED (SELECT id, created_at FROM ${sql(t.audit_log_entries)}
            WHERE ${sql.or(PAYLOAD_KEYS[query.field].map((key) => sql`payload->>${sql.literal(`'${key}'`)} ILIKE ${pattern} ESCAPE '\\'`))}),
          page AS (SELECT id, created_at FROM matched ORDER BY created_at DESC, id DESC LIMIT ${perPage} OFFSET ${offset})
        SELECT (SELECT count(*) FROM matched)::text AS listed_total, a.id, a.payload, a.created_at, a.ip_address
        FROM (SELECT 1) one LEFT JOIN (page JOIN ${sql(t.audit_log_entries)} a ON a.id = page.id) ON true
        ORDER BY page.created_at DESC, page.id DESC`
      const entries = rows.filter((row) => row.id !== null).map(({ listed_total: _, ...entry }): AuditLogEntry => entry)
      return { entries, total: Number(rows[0]?.listed_total ?? 0) }
    }, Effect.orDie)

    return { insert, page } satisfies AuditLogRepoShape
  })
}) {
  static readonly Test: Layer.Layer<AuditLogRepo> = Layer.effect(
    AuditLogRepo,
    Effect.map(Ref.make<ReadonlyArray<AuditLogEntry>>([]), (rows) =>
      AuditLogRepo.make({
        insert: (entries) =>
          Ref.update(rows, (all) => [...all, ...entries.map((entry) => ({
            id: entry.id,
            // Stored as JSON text, as the table stores it: what goes in is what a reader gets back.
            payload: JSON.parse(JSON.stringify(entry.payload)),
            created_at: entry.createdAt,
            ip_address: entry.ipAddress
          }))]),
        page: (page, perPage, query) =>
          Effect.map(Ref.get(rows), (all) => {
            const needle = query?.value.toLowerCase() ?? ""
            const matching = query === undefined ? all : all.filter((entry) =>
              PAYLOAD_KEYS[query.field].some((key) => {
                const value = entry.payload[key]
                return value !== undefined && value !== null &&
                  (typeof value === "string" ? value : JSON.stringify(value)).toLowerCase().includes(needle)
              }))
            const sorted = [...matching].sort((a, b) =>
              b.created_at.getTime() - a.created_at.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
            const rows = window(page, perPage, sorted.length)
            return {
              entries: rows === undefined ? [] : sorted.slice(rows.offset, rows.offset + rows.limit),
              total: sorted.length
            }
          })
      }))
  )
}
