/**
 * GET /admin/users and GET /admin/audit answer byte for byte what they answered before issue 30 made each one
 * statement over the count table (migration 0024): the body, Link and X-Total-Count of every page are compared with
 * what the former statements (a count, a LIMIT/OFFSET page, then the page's identities and factors) give for the
 * same rows, encoded as the handlers encode them. The rows are seeded to be awkward: ties on created_at, NULL
 * created_at, users with none, one or two identities and with factors, timestamps to the microsecond, metadata
 * with LIKE's own characters, two audiences.
 */
import { describe, expect } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { AuditEntry } from "../../../src/auth/admin/AdminAuditApi.js"
import { AdminUserList } from "../../../src/auth/admin/AdminUsersApi.js"
import { authTables } from "../../../src/auth/AuthTables.js"
import type { FactorRow } from "../../../src/auth/domain/FactorRow.js"
import { pagingHeaders, parsePage } from "../../../src/auth/domain/Pagination.js"
import type { IdentityRow, UserRow } from "../../../src/auth/domain/UserRow.js"
import { type AuditLogEntry, parseAuditQuery } from "../../../src/auth/users/AuditLogRepo.js"
import { userJson } from "../../../src/auth/users/UserJson.js"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, adminJwt, raw } from "./AcceptanceKit.js"

const t = authTables("")
const USERS = 260
const OTHER_AUD = 40
const AUDIT = 230

const seed = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Created three to a second (exact ties, broken by id), every 50th with no created_at at all.
  yield* sql.unsafe(`INSERT INTO ${t.users} (instance_id, id, aud, role, email, phone, encrypted_password, email_confirmed_at,
      raw_app_meta_data, raw_user_meta_data, created_at, updated_at, last_sign_in_at, confirmation_token, recovery_token,
      email_change_token_new, email_change_token_current, email_change, phone_change, phone_change_token, reauthentication_token,
      is_anonymous, is_sso_user)
    SELECT '00000000-0000-0000-0000-000000000000', md5('parity-user-' || g)::uuid,
      CASE WHEN g > ${USERS} THEN 'other-aud' ELSE 'authenticated' END, 'authenticated',
      CASE WHEN g % 10 = 0 THEN NULL ELSE 'Parity.User' || g || '@Example.com' END,
      CASE WHEN g % 3 = 0 THEN '1555000' || lpad(g::text, 4, '0') END, '',
      CASE WHEN g % 2 = 0 THEN timestamptz '2024-02-01 10:00:00.123456+00' + g * interval '1.000001 second' END,
      '{"provider":"email","providers":["email"]}'::jsonb,
      CASE g % 5 WHEN 0 THEN jsonb_build_object('full_name', 'Ada_Lovelace ' || g) WHEN 1 THEN jsonb_build_object('full_name', 'grace 100% HOPPER ' || g)
        WHEN 2 THEN '{}'::jsonb WHEN 3 THEN jsonb_build_object('full_name', null, 'n', g) ELSE jsonb_build_object('full_name', g) END,
      CASE WHEN g % 50 = 0 THEN NULL ELSE timestamptz '2024-01-01 00:00:00+00' + (g / 3) * interval '1 second' END,
      timestamptz '2024-03-01 00:00:00.000001+00' + g * interval '1 millisecond', NULL, '', '', '', '', '', '', '', '', false, false
    FROM generate_series(1, ${USERS + OTHER_AUD}) g`)
  yield* sql.unsafe(`INSERT INTO ${t.identities} (id, provider_id, user_id, identity_data, provider, last_sign_in_at, created_at, updated_at)
    SELECT md5('parity-identity-' || g || '-' || k)::uuid, md5('parity-user-' || g)::uuid::text || k, md5('parity-user-' || g)::uuid,
      jsonb_build_object('sub', md5('parity-user-' || g)::uuid, 'email', 'parity.user' || g || '@example.com', 'k', k),
      CASE k WHEN 1 THEN 'email' ELSE 'github' END,
      CASE WHEN g % 4 = 0 THEN NULL ELSE timestamptz '2024-01-05 00:00:00+00' + g * interval '1.234567 second' END,
      timestamptz '2024-01-02 00:00:00.000999+00' + (g * 2 + k) * interval '0.987654 second',
      timestamptz '2024-01-03 00:00:00.5+00' + g * interval '0.000123 second'
    FROM generate_series(1, ${USERS + OTHER_AUD}) g, generate_series(1, 2) k
    WHERE (k = 1 AND g % 5 <> 0) OR (k = 2 AND g % 7 = 0)`)
  yield* sql.unsafe(`INSERT INTO ${t.mfa_factors} (id, user_id, friendly_name, factor_type, status, created_at, updated_at, secret, phone,
      last_challenged_at)
    SELECT md5('parity-factor-' || g || '-' || k)::uuid, md5('parity-user-' || g)::uuid, CASE WHEN k = 1 THEN 'phone ' || g END,
      CASE WHEN k = 1 THEN 'totp' ELSE 'phone' END::auth.factor_type, CASE WHEN k = 1 THEN 'verified' ELSE 'unverified' END::auth.factor_status,
      timestamptz '2024-01-04 00:00:00.654321+00' + (g + k) * interval '1 second', timestamptz '2024-01-04 00:00:00.000001+00' + g * interval '1 second',
      'secret', CASE WHEN k = 2 THEN '1555111' || lpad(g::text, 4, '0') END,
      CASE WHEN g % 2 = 0 AND k = 1 THEN timestamptz '2024-01-06 00:00:00.777777+00' + g * interval '1.000003 second' END
    FROM generate_series(1, ${USERS + OTHER_AUD}) g, generate_series(1, 2) k
    WHERE g % 11 = 0 AND (k = 1 OR g % 22 = 0)`)
  // Four to a millisecond (ties broken by id), with actor names of several kinds.
  yield* sql.unsafe(`INSERT INTO ${t.audit_log_entries} (instance_id, id, payload, created_at, ip_address)
    SELECT '00000000-0000-0000-0000-000000000000', md5('parity-audit-' || a)::uuid,
      (json_build_object('actor_id', md5('parity-user-' || a)::uuid, 'actor_username', 'Parity.User' || (a % 17) || '@example.com',
        'actor_via_sso', false, 'action', (ARRAY['token_refreshed', 'token_revoked', 'login', 'user_signedup', 'user_deleted'])[a % 5 + 1],
        'log_type', (ARRAY['token', 'token', 'account', 'team', 'team'])[a % 5 + 1])::jsonb
        || CASE a % 6 WHEN 0 THEN jsonb_build_object('actor_name', 'Ada_100% ' || a) WHEN 1 THEN jsonb_build_object('actor_name', a)
          WHEN 2 THEN jsonb_build_object('traits', jsonb_build_object('provider', 'email', 'n', a)) ELSE '{}'::jsonb END)::json,
      timestamptz '2024-01-01 00:00:00.000001+00' + (a / 4) * interval '1.001 millisecond', CASE WHEN a % 3 = 0 THEN '10.0.0.' || a ELSE '' END
    FROM generate_series(1, ${AUDIT}) a`)
})

/** The list as it was answered before 0024: a count, a page, then the page's identities and factors. */
const formerUserList = (aud: string, filter: string, page: number, perPage: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pattern = `%${filter.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
    const where = filter === ""
      ? sql`aud = ${aud}`
      : sql`aud = ${aud} AND (email ILIKE ${pattern} OR phone ILIKE ${pattern} OR raw_user_meta_data->>'full_name' ILIKE ${pattern})`
    const [count] = yield* sql<{ total: string }>`SELECT count(*)::text AS total FROM ${sql(t.users)} WHERE ${where}`
    const users = yield* sql<UserRow>`SELECT * FROM ${sql(t.users)} WHERE ${where}
      ORDER BY created_at DESC, id DESC LIMIT ${perPage} OFFSET ${(page - 1) * perPage}`
    const ids = users.map((user) => user.id)
    const identities = ids.length === 0 ? [] : yield* sql<IdentityRow>`SELECT id, provider_id, user_id, identity_data, provider,
      last_sign_in_at, created_at, updated_at, email FROM ${sql(t.identities)} WHERE ${sql.in("user_id", ids)} ORDER BY created_at, id`
    const factors = ids.length === 0 ? [] : yield* sql<FactorRow>`SELECT f.id, f.user_id, f.friendly_name, f.factor_type, f.status,
      f.created_at, f.updated_at, f.phone, f.last_challenged_at, f.web_authn_aaguid, f.last_webauthn_challenge_data
      FROM ${sql(t.mfa_factors)} f WHERE f.user_id IN ${sql.in(ids)} ORDER BY f.created_at, f.id`
    const json = users.map((user) =>
      userJson(user, identities.filter((i) => i.user_id === user.id), factors.filter((f) => f.user_id === user.id)))
    return { body: JSON.stringify(Schema.encodeSync(AdminUserList)(new AdminUserList({ users: json, aud }))), total: Number(count!.total) }
  })

const AUDIT_KEYS = { author: ["actor_username", "actor_name"], action: ["action"], type: ["log_type"] } as const

/** The audit page as it was answered before 0024: a count, then a LIMIT/OFFSET page when it is not past the end. */
const formerAuditPage = (query: string | undefined, page: number, perPage: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const parsed = Effect.runSync(parseAuditQuery(query))
    const where = parsed === undefined
      ? sql`TRUE`
      : sql.or(AUDIT_KEYS[parsed.field].map((key) =>
        sql`payload->>${key} ILIKE ${`%${parsed.value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`} ESCAPE '\\'`))
    const [counted] = yield* sql<{ total: string }>`SELECT count(*)::text AS total FROM ${sql(t.audit_log_entries)} WHERE ${where}`
    const total = Number(counted!.total)
    const offset = (page - 1) * perPage
    const entries = offset >= total ? [] : yield* sql<AuditLogEntry>`SELECT id, payload, created_at, ip_address
      FROM ${sql(t.audit_log_entries)} WHERE ${where}
      ORDER BY created_at DESC, id DESC LIMIT ${Math.min(perPage, total - offset)} OFFSET ${offset}`
    const body = Schema.encodeSync(Schema.Array(AuditEntry))(entries.map((entry) =>
      new AuditEntry({ id: entry.id, payload: entry.payload, created_at: entry.created_at.toISOString(), ip_address: entry.ip_address })))
    return { body: JSON.stringify(body), total }
  })

const pageOf = (params: URLSearchParams) => Effect.runSync(parsePage(params.get("page") ?? undefined, params.get("per_page") ?? undefined))

describe("admin list and audit log: the same bytes as before the count table", () => {
  acceptance({})((it) => {
    it.effect("every page of GET /admin/users (audiences, filters, per_page, past the end) and of GET /admin/audit", () =>
      Effect.gen(function*() {
        yield* seed
        const url = yield* ServerUrl
        const admin = adminJwt()
        const compare = (path: string, query: string, headers: Record<string, string>, former: { body: string; total: number }) =>
          Effect.gen(function*() {
            const response = yield* raw(url, `${path}?${query}`, { bearer: admin, headers })
            const expected = pagingHeaders(`${path}?${query}`, pageOf(new URLSearchParams(query)), former.total)
            expect(response.status, `${path}?${query}`).toBe(200)
            expect(response.text, `${path}?${query}`).toBe(former.body)
            expect([response.headers.get("x-total-count"), response.headers.get("link")], `${path}?${query}`)
              .toEqual([expected["x-total-count"], expected.link])
          })

        const audiences = [["authenticated", USERS], ["other-aud", OTHER_AUD]] as const
        const filters = ["", "parity", "PARITY.USER1", "ada_", "100%", "%", "_", "1555000", "hopper 2", "nobody-matches-this"]
        let compared = 0
        for (const [aud, size] of audiences) {
          for (const filter of filters) {
            for (const perPage of [1, 7, 50, 1000]) {
              const last = Math.max(1, Math.ceil(size / perPage))
              const pages = [...new Set([0, 1, 2, Math.ceil(last / 2), last - 1, last, last + 1, last + 50])].filter((p) => p >= 0)
              for (const page of pages) {
                const params = new URLSearchParams([["page", String(page)], ["per_page", String(perPage)], ...(filter === "" ? [] : [["filter", filter] as [string, string]])])
                const headers = aud === "authenticated" ? {} : { "x-jwt-aud": aud }
                yield* compare("/admin/users", params.toString(), headers, yield* formerUserList(aud, filter, Math.max(page, 1), perPage))
                compared++
              }
            }
          }
        }
        for (const query of [undefined, "author:parity.user1", "author:ADA_100%", "author:1", "action:token", "type:team", "action:nothing"]) {
          for (const perPage of [1, 9, 50]) {
            const last = Math.max(1, Math.ceil(AUDIT / perPage))
            for (const page of [...new Set([1, 2, Math.ceil(last / 2), last - 1, last, last + 1])].filter((p) => p >= 1)) {
              const params = new URLSearchParams([["page", String(page)], ["per_page", String(perPage)], ...(query === undefined ? [] : [["query", query] as [string, string]])])
              yield* compare("/admin/audit", params.toString(), {}, yield* formerAuditPage(query, page, perPage))
              compared++
            }
          }
        }
        expect(compared).toBeGreaterThan(500)
      }), { timeout: 300_000 })
  })
})
