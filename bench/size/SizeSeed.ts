import { createHash } from "node:crypto"
import pg from "pg"

/** How much the size run adds beside the users made through the API. */
export interface SizePlan {
  readonly users: number
  /** One session each for the first `sessions` seeded users. */
  readonly sessions: number
  /** Refresh tokens per session: `family - 1` revoked, then the current one. */
  readonly family: number
  readonly auditRows: number
}

/** The issue's proportions: a million users, half a million sessions in families of 10, two million audit rows. */
export const sizePlan = (users: number): SizePlan => ({
  users,
  sessions: Math.max(1, Math.floor(users / 2)),
  family: 10,
  auditRows: users * 2
})

const NIL = "00000000-0000-0000-0000-000000000000"

/**
 * The SHA-256 digest of the refresh token Gatehouse derives for row `id` of session `sid` (RefreshTokenCodec:
 * GoTrue's signed form, keyed by HMAC(refresh key, "gotrue-signed/<session>"), counter = row id), in SQL, so the
 * seeded rows are ones Gatehouse itself could have written: its cleanup recognises them as its own.
 */
const digestFunctions = (crypto: string): string => `
CREATE SCHEMA IF NOT EXISTS bench_seed;
CREATE OR REPLACE FUNCTION bench_seed.uvarint(v bigint) RETURNS bytea LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE out bytea := ''::bytea;
BEGIN
  WHILE v >= 128 LOOP
    out := out || set_byte('\\x00'::bytea, 0, ((v & 127) | 128)::int);
    v := v >> 7;
  END LOOP;
  RETURN out || set_byte('\\x00'::bytea, 0, v::int);
END $$;
CREATE OR REPLACE FUNCTION bench_seed.token_digest(rk bytea, sid uuid, id bigint) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  WITH k AS (SELECT ${crypto}.hmac(convert_to('gotrue-signed/' || sid::text, 'UTF8'), rk, 'sha256') AS key),
  s AS (SELECT '\\x00'::bytea || decode(replace(sid::text, '-', ''), 'hex') || bench_seed.uvarint(id) AS signed),
  b AS (SELECT s.signed || substring(${crypto}.hmac(s.signed, k.key, 'sha256') FROM 1 FOR 16) AS body FROM s, k)
  SELECT encode(sha256(convert_to(
    rtrim(translate(replace(encode(b.body || substring(sha256(b.body) FROM 1 FOR 4), 'base64'), E'\\n', ''), '+/', '-_'), '='),
    'UTF8')), 'hex') FROM b
$$;`

const email = (n: string) => `'size-' || lpad(${n}::text, 7, '0') || '@seed.example'`
const userId = (n: string) => `md5('seed-user-' || ${n})::uuid`

const usersSql = (plan: SizePlan) => `
INSERT INTO auth.users (instance_id, id, aud, role, email, encrypted_password, email_confirmed_at, raw_app_meta_data,
  raw_user_meta_data, created_at, updated_at, last_sign_in_at, is_anonymous, is_sso_user)
SELECT '${NIL}', ${userId("g")}, 'authenticated', 'authenticated', ${email("g")},
  '$2a$10$abcdefghijklmnopqrstuu7Ka8Gy3.cbEXn5Ow4f3Yc.9ydqHmS2m',
  now() - (g || ' seconds')::interval,
  '{"provider":"email","providers":["email"]}'::jsonb,
  jsonb_build_object('sub', ${userId("g")}, 'email', ${email("g")}, 'email_verified', true, 'phone_verified', false,
    'full_name', 'Seed Person ' || g),
  now() - interval '400 days' + (g || ' seconds')::interval, now(), now() - (g % 1000 || ' minutes')::interval, false, false
FROM generate_series(1, ${plan.users}) g`

const identitiesSql = (plan: SizePlan) => `
INSERT INTO auth.identities (id, provider_id, user_id, identity_data, provider, last_sign_in_at, created_at, updated_at)
SELECT md5('seed-identity-' || g)::uuid, ${userId("g")}::text, ${userId("g")},
  jsonb_build_object('sub', ${userId("g")}, 'email', ${email("g")}, 'email_verified', false, 'phone_verified', false),
  'email', now(), now() - interval '400 days' + (g || ' seconds')::interval, now()
FROM generate_series(1, ${plan.users}) g`

const sessionsSql = (plan: SizePlan) => `
INSERT INTO auth.sessions (id, user_id, created_at, updated_at, aal, refreshed_at)
SELECT md5('seed-session-' || s)::uuid, ${userId("s")}, now() - interval '30 days', now(), 'aal1',
  now() - (s % 3600 || ' seconds')::interval
FROM generate_series(1, ${plan.sessions}) s`

/**
 * Refresh tokens of families k in [from, to]: row id base + (k-1)·sessions + (s-1), so ids grow with time as real
 * rotations make them; every token but the last of its family revoked, each the parent of the next.
 */
const tokensSql = (plan: SizePlan, base: bigint, from: number, to: number) => `
INSERT INTO auth.refresh_tokens (instance_id, id, token, user_id, revoked, created_at, updated_at, parent, session_id)
SELECT '${NIL}', t.id, t.token, ${userId("t.s")}::text, t.k < ${plan.family},
  now() - interval '30 days' + (t.k || ' hours')::interval, now() - interval '30 days' + ((t.k + 1) || ' hours')::interval,
  CASE WHEN t.k = 1 THEN NULL
       WHEN t.k = ${from} THEN bench_seed.token_digest($1, t.sid, t.id - ${plan.sessions})
       ELSE lag(t.token) OVER (PARTITION BY t.s ORDER BY t.k) END,
  t.sid
FROM (SELECT f.*, bench_seed.token_digest($1, f.sid, f.id) AS token
      FROM (SELECT k, s, md5('seed-session-' || s)::uuid AS sid, ${base}::bigint + (k - 1)::bigint * ${plan.sessions} + (s - 1) AS id
            FROM generate_series(${from}, ${to}) k, generate_series(1, ${plan.sessions}) s) f) t
ORDER BY t.id`

const auditSql = (plan: SizePlan) => `
INSERT INTO auth.audit_log_entries (instance_id, id, payload, created_at, ip_address)
SELECT '${NIL}', md5('seed-audit-' || a)::uuid,
  json_build_object('actor_id', ${userId(`(a % ${plan.users} + 1)`)}, 'actor_username', ${email(`(a % ${plan.users} + 1)`)},
    'actor_via_sso', false, 'action', (ARRAY['token_refreshed','token_revoked','login','user_signedup'])[a % 4 + 1],
    'log_type', (ARRAY['token','token','account','team'])[a % 4 + 1]),
  now() - interval '400 days' + (a * 10 || ' seconds')::interval, ''
FROM generate_series(1, ${plan.auditRows}) a`

/** md5('seed-session-' || n)::uuid, as the SQL makes it. */
export const seededSessionId = (n: number): string =>
  createHash("md5").update(`seed-session-${n}`).digest("hex").replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, "$1-$2-$3-$4-$5")

const BIG_TABLES = ["users", "identities", "sessions", "refresh_tokens", "audit_log_entries", "mfa_amr_claims"] as const

export interface SeedReport {
  readonly seconds: number
  /** The current (unrevoked) refresh token row of seeded session 1, to prove the seeded digests are Gatehouse's. */
  readonly firstSessionCurrent: { readonly sessionId: string; readonly rowId: string }
  readonly usersTotal: number
  readonly databaseBytes: number
  readonly tableBytes: Readonly<Record<string, number>>
}

export type DatabaseSize = Omit<SeedReport, "seconds" | "firstSessionCurrent">

const withClient = async <A>(url: string, use: (client: pg.Client) => Promise<A>): Promise<A> => {
  const client = new pg.Client({ connectionString: url })
  client.on("error", () => undefined)
  await client.connect()
  try {
    return await use(client)
  } finally {
    await client.end()
  }
}

/** The database's size and its big tables' (indexes and TOAST included), and how many users it holds. */
export const databaseSize = (url: string): Promise<DatabaseSize> =>
  withClient(url, async (client) => {
    const db = await client.query<{ bytes: string; users: string }>(
      "SELECT pg_database_size(current_database())::text AS bytes, (SELECT count(*) FROM auth.users)::text AS users"
    )
    const tables = await client.query<{ name: string; bytes: string }>(
      `SELECT c.relname AS name, pg_total_relation_size(c.oid)::text AS bytes FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'auth' AND c.relname = ANY($1)`,
      [BIG_TABLES]
    )
    return {
      usersTotal: Number(db.rows[0]!.users),
      databaseBytes: Number(db.rows[0]!.bytes),
      tableBytes: Object.fromEntries(tables.rows.map((r) => [r.name, Number(r.bytes)]))
    }
  })

/**
 * Adds `plan`'s rows by SQL alone (generate_series; nothing through the API), beside what is there, then VACUUM
 * ANALYZE so the planner and index-only scans see the new rows as production would after autovacuum. The refresh
 * tokens are derived with the server's refresh key on two connections: they are most of the work.
 */
export const seedAtSize = async (
  url: string,
  plan: SizePlan,
  refreshKey: Buffer,
  progress: (line: string) => void
): Promise<SeedReport> => {
  const began = Date.now()
  const step = async (what: string, sql: string, values: ReadonlyArray<unknown> = [], client?: pg.Client) => {
    const started = Date.now()
    if (client === undefined) await withClient(url, (c) => c.query(sql, [...values]))
    else await client.query(sql, [...values])
    progress(`  ${what}: ${((Date.now() - started) / 1000).toFixed(0)} s`)
  }
  const crypto = await withClient(url, async (client) => {
    await client.query("CREATE EXTENSION IF NOT EXISTS pgcrypto")
    const found = await client.query<{ schema: string }>(
      "SELECT n.nspname AS schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pgcrypto'"
    )
    return client.escapeIdentifier(found.rows[0]!.schema)
  })
  await step("digest functions", digestFunctions(crypto))
  await step(`${plan.users} users`, usersSql(plan))
  await step(`${plan.users} identities`, identitiesSql(plan))
  await step(`${plan.sessions} sessions`, sessionsSql(plan))
  const base = await withClient(url, async (client) => {
    const { rows } = await client.query<{ base: string }>(
      `SELECT setval(pg_get_serial_sequence('auth.refresh_tokens', 'id'),
                     nextval(pg_get_serial_sequence('auth.refresh_tokens', 'id')) + $1::bigint) - $1::bigint + 1 AS base`,
      [plan.sessions * plan.family]
    )
    return BigInt(rows[0]!.base)
  })
  const half = Math.ceil(plan.family / 2)
  await Promise.all([
    step(`refresh tokens, families 1–${half}`, tokensSql(plan, base, 1, half), [refreshKey]),
    step(`refresh tokens, families ${half + 1}–${plan.family}`, tokensSql(plan, base, half + 1, plan.family), [refreshKey])
  ])
  await step(`${plan.auditRows} audit rows`, auditSql(plan))
  await step("VACUUM ANALYZE", `VACUUM ANALYZE ${BIG_TABLES.map((t) => `auth.${t}`).join(", ")}`)
  await step("CHECKPOINT", "CHECKPOINT")
  return {
    seconds: (Date.now() - began) / 1000,
    firstSessionCurrent: { sessionId: seededSessionId(1), rowId: String(base + BigInt((plan.family - 1) * plan.sessions)) },
    ...(await databaseSize(url))
  }
}
