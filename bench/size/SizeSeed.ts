import { createHash } from "node:crypto"
import { deriveRefreshToken, digestRefreshToken } from "../../src/auth/sessions/RefreshTokenCodec.js"
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
 * One batch of refresh-token rows, made in Node and sent as arrays: the row id, family position k (1 = oldest) and
 * session number s of each, and its token and parent digests. SQL derives the rest from k and s.
 */
const TOKENS_SQL = (plan: SizePlan) => `
INSERT INTO auth.refresh_tokens (instance_id, id, token, user_id, revoked, created_at, updated_at, parent, session_id)
SELECT '${NIL}', t.id, t.token, ${userId("t.s")}::text, t.k < ${plan.family},
  now() - interval '30 days' + (t.k || ' hours')::interval, now() - interval '30 days' + ((t.k + 1) || ' hours')::interval,
  t.parent, md5('seed-session-' || t.s)::uuid
FROM unnest($1::bigint[], $2::int[], $3::int[], $4::text[], $5::text[]) AS t(id, k, s, token, parent)`

const TOKEN_BATCH = 20_000

/**
 * The refresh tokens: each seeded session a family of `plan.family`, row id base + (k-1)·sessions + (s-1) so ids grow
 * with time as real rotations make them, every token but the last revoked, each the parent of the next. The digests are
 * those of the tokens Gatehouse derives for these rows (RefreshTokenCodec), so the server can exchange a seeded
 * session's current token and its cleanup recognises the rows as its own. Made in Node (a few µs a row) on two
 * connections, each inserting while the other's batch is made.
 */
/**
 * The token column of the k-th row of a seeded family. The current token and its parent are Gatehouse's signed form
 * (the current one must exchange: the run checks it). The older revoked rows are GoTrue's legacy form, 12 characters,
 * as a database adopted from GoTrue holds them: a database Gatehouse made keeps no revoked signed row past ten minutes
 * (housekeeping sweeps them), so millions of them would be a backlog of one moment, not the size the run measures.
 */
const seededToken = (refreshKey: Buffer, plan: SizePlan, sessionId: string, id: bigint, k: number): string =>
  k >= plan.family - 1
    ? digestRefreshToken(deriveRefreshToken(refreshKey, sessionId, String(id)))
    : createHash("sha256").update(`seed-legacy-${id}`).digest("base64url").slice(0, 12)

const insertTokens = async (url: string, plan: SizePlan, base: bigint, refreshKey: Buffer): Promise<void> => {
  const clients = [new pg.Client({ connectionString: url }), new pg.Client({ connectionString: url })]
  for (const client of clients) {
    client.on("error", () => undefined)
    await client.connect()
  }
  try {
    const sql = TOKENS_SQL(plan)
    const inFlight: Array<Promise<unknown> | undefined> = [undefined, undefined]
    let batch = 0
    for (let k = 1; k <= plan.family; k++) {
      for (let first = 1; first <= plan.sessions; first += TOKEN_BATCH) {
        const ids: Array<string> = [], ks: Array<number> = [], ss: Array<number> = [], tokens: Array<string> = []
        const parents: Array<string | null> = []
        for (let s = first; s < Math.min(first + TOKEN_BATCH, plan.sessions + 1); s++) {
          const sid = seededSessionId(s)
          const id = base + BigInt((k - 1) * plan.sessions + (s - 1))
          ids.push(String(id)), ks.push(k), ss.push(s)
          tokens.push(seededToken(refreshKey, plan, sid, id, k))
          parents.push(k === 1 ? null : seededToken(refreshKey, plan, sid, id - BigInt(plan.sessions), k - 1))
        }
        const slot = batch++ % 2
        await inFlight[slot]
        inFlight[slot] = clients[slot]!.query(sql, [ids, ks, ss, tokens, parents])
      }
    }
    await Promise.all(inFlight)
  } finally {
    await Promise.all(clients.map((c) => c.end()))
  }
}

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
 * Adds `plan`'s rows by SQL alone (generate_series, and INSERTs of arrays made in Node; nothing through the API), then VACUUM
 * ANALYZE so the planner and index-only scans see the new rows as production would after autovacuum. The refresh
 * tokens are derived with the server's refresh key: they are most of the work.
 */
export const seedAtSize = async (
  url: string,
  plan: SizePlan,
  refreshKey: Buffer,
  progress: (line: string) => void
): Promise<SeedReport> => {
  const began = Date.now()
  const step = async (what: string, sql: string) => {
    const started = Date.now()
    await withClient(url, (c) => c.query(sql))
    progress(`  ${what}: ${((Date.now() - started) / 1000).toFixed(0)} s`)
  }
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
  const tokensStarted = Date.now()
  await insertTokens(url, plan, base, refreshKey)
  progress(`  ${plan.sessions * plan.family} refresh tokens: ${((Date.now() - tokensStarted) / 1000).toFixed(0)} s`)
  await step(`${plan.auditRows} audit rows`, auditSql(plan))
  await step("VACUUM ANALYZE", `VACUUM ANALYZE ${BIG_TABLES.map((t) => `auth.${t}`).join(", ")}`)
  await step("CHECKPOINT", "CHECKPOINT")
  return {
    seconds: (Date.now() - began) / 1000,
    firstSessionCurrent: { sessionId: seededSessionId(1), rowId: String(base + BigInt((plan.family - 1) * plan.sessions)) },
    ...(await databaseSize(url))
  }
}
