/**
 * ★ The minimal server's SQL: for each scenario, the statements Gatehouse ran for one request, in its order, as
 * PostgreSQL logged them (log_statement=all, one request of each kind against `node dist/main.js`). Keep each
 * block in step with Gatehouse: `npm run bench -- --sql` prints the statements per request of both sides, and the
 * results table shows them for every scenario, so a change on one side shows up as a mismatch.
 *
 * Measured on Gatehouse 0.1.0 after issue 13's round-trip work (the identities ride with the user as one JSON
 * array; the factors too since):
 *   POST /signup (autoconfirm)       14 = 1 + BEGIN 3 COMMIT + BEGIN 5 COMMIT
 *   POST /token password              9 = 1 + BEGIN 5 COMMIT
 *   POST /token refresh_token         2 (an unlocked read, then one atomic rotation; issue 30)
 *   GET /user                         1
 *   IAM Login (by username)           3
 *   IAM ValidateToken                 0 (revocations are cached in memory, reloaded by LISTEN/NOTIFY or polling)
 */
import { randomUUID } from "node:crypto"
import type pg from "pg"

/** A row as node-postgres returns it: jsonb parsed, timestamptz as Date. */
export type Row = Record<string, any>

/** What a session response is built from. */
export interface StartedSession {
  readonly user: Row
  readonly identities: ReadonlyArray<Row>
  readonly sessionId: string
  readonly refreshToken: string
  readonly amr: ReadonlyArray<{ readonly method: string; readonly timestamp: number }>
}

/** The CPU work between statements (bcrypt, token derivation) is the caller's: only the SQL lives here. */
export interface Crypto {
  readonly hashPassword: (password: string) => Promise<string>
  readonly checkPassword: (password: string, hash: string | undefined) => Promise<boolean>
  /** The refresh token of row `rowId` in session `sessionId`, and the digest the database keeps. */
  readonly refreshToken: (sessionId: string, rowId: string) => { readonly token: string; readonly digest: string }
}

const INSTANCE_ID = "00000000-0000-0000-0000-000000000000"

const transaction = async <A>(pool: pg.Pool, body: (client: pg.PoolClient) => Promise<A>): Promise<A> => {
  const client = await pool.connect()
  try {
    await client.query("BEGIN")
    const result = await body(client)
    await client.query("COMMIT")
    return result
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined)
    throw error
  } finally {
    client.release()
  }
}

// --- Shared statements ------------------------------------------------------------------------------------------

const findUserByEmail = async (db: pg.Pool, email: string): Promise<Row | undefined> =>
  (await db.query(
    `SELECT * FROM "auth"."users"
        WHERE lower(email) = $1 AND aud = $2 AND is_sso_user = false LIMIT 1`,
    [email.toLowerCase(), "authenticated"]
  )).rows[0]

// The user's identities as one JSON array, selected with the user (timestamps arrive as text).
const IDENTITIES_JSON = `COALESCE((SELECT json_agg(json_build_object('id', i.id, 'provider_id', i.provider_id, 'user_id', i.user_id,
          'identity_data', i.identity_data, 'provider', i.provider, 'last_sign_in_at', i.last_sign_in_at,
          'created_at', i.created_at, 'updated_at', i.updated_at, 'email', i.email) ORDER BY i.created_at, i.id)
        FROM "auth"."identities" i WHERE i.user_id = "u".id), '[]'::json) AS identities_json`

// The user's factors the same way (SessionsRepo.factorsOf). The benchmark's users have none, and the minimal server
// answers none, but it reads and parses them as Gatehouse does.
const FACTORS_JSON = `COALESCE((SELECT json_agg(json_build_object('id', f.id, 'user_id', f.user_id, 'friendly_name', f.friendly_name,
      'factor_type', f.factor_type, 'status', f.status, 'created_at', f.created_at, 'updated_at', f.updated_at,
      'phone', f.phone, 'last_challenged_at', f.last_challenged_at, 'web_authn_aaguid', f.web_authn_aaguid,
      'last_webauthn_challenge_data', f.last_webauthn_challenge_data) ORDER BY f.created_at, f.id)
    FROM "auth"."mfa_factors" f WHERE f.user_id = "u".id), '[]'::json) AS factors_json`

const dateOrNull = (text: string | null): Date | null => (text === null ? null : new Date(text))

/** Splits a row selected with IDENTITIES_JSON and FACTORS_JSON into the user, its identity rows and its factors. */
const withIdentities = (row: Row): { readonly user: Row; readonly identities: ReadonlyArray<Row>; readonly factors: ReadonlyArray<Row> } => {
  const { factors_json, identities_json, ...user } = row
  return {
    user,
    identities: (identities_json as ReadonlyArray<Row>).map((i) => ({
      ...i,
      last_sign_in_at: dateOrNull(i.last_sign_in_at),
      created_at: dateOrNull(i.created_at),
      updated_at: dateOrNull(i.updated_at)
    })),
    factors: (factors_json as ReadonlyArray<Row>).map((f) => ({
      ...f,
      created_at: new Date(f.created_at),
      updated_at: new Date(f.updated_at),
      last_challenged_at: dateOrNull(f.last_challenged_at)
    }))
  }
}

const auditPayload = (actor: Row, action: string, logType: string, traits?: object): string =>
  JSON.stringify({
    actor_id: actor.id,
    actor_username: actor.email ?? "",
    actor_via_sso: false,
    action,
    log_type: logType,
    ...(traits === undefined ? {} : { traits })
  })

const audit = (db: pg.PoolClient, actor: Row, action: string, logType: string, at: Date, traits?: object) =>
  db.query(
    `INSERT INTO "auth"."audit_log_entries" (instance_id, id, payload, created_at, ip_address)
        VALUES ($1, $2, $3::json, $4, $5)`,
    [INSTANCE_ID, randomUUID(), auditPayload(actor, action, logType, traits), at, ""]
  )

const nextRefreshTokenId = async (db: pg.PoolClient): Promise<string> =>
  (await db.query(`SELECT nextval(pg_get_serial_sequence($1, 'id'))::text AS id`, ["auth.refresh_tokens"])).rows[0].id

const insertRefreshToken = (db: pg.PoolClient, row: {
  id: string; digest: string; userId: string; at: Date; parent: string | null; sessionId: string
}) =>
  db.query(
    `INSERT INTO "auth"."refresh_tokens" ("instance_id","id","token","user_id","revoked","created_at","updated_at","parent","session_id") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)`,
    [INSTANCE_ID, row.id, row.digest, row.userId, false, row.at, row.at, row.parent, row.sessionId]
  )

const upsertAmrClaim = (db: pg.PoolClient, sessionId: string, method: string, at: Date) =>
  db.query(
    `INSERT INTO "auth"."mfa_amr_claims" (session_id, created_at, updated_at, authentication_method, id)
      VALUES ($1, $2, $3, $4, gen_random_uuid())
      ON CONFLICT (session_id, authentication_method) DO UPDATE SET updated_at = EXCLUDED.updated_at`,
    [sessionId, at, at, method]
  )

/** A new session for a user who just signed in (BEGIN, 5 statements, COMMIT); the identities come with the user. */
const startSession = async (pool: pg.Pool, crypto: Crypto, user: Row, method: string): Promise<StartedSession> => {
  const at = new Date()
  const sessionId = randomUUID()
  const { refreshToken, signedIn } = await transaction(pool, async (db) => {
    await db.query(
      `INSERT INTO "auth"."sessions" ("id","user_id","not_after","created_at","updated_at","aal","refreshed_at") VALUES ($1,$2,$3,$4,$5,$6,$7)`,
      [sessionId, user.id, null, at, at, "aal1", at]
    )
    const id = await nextRefreshTokenId(db)
    const { digest, token } = crypto.refreshToken(sessionId, id)
    await insertRefreshToken(db, { id, digest, userId: user.id, at, parent: null, sessionId })
    await upsertAmrClaim(db, sessionId, method, at)
    const updated = withIdentities((await db.query(
      `
        UPDATE "auth"."users" u SET last_sign_in_at = $1, updated_at = $2 WHERE id = $3
        RETURNING u.*, ${IDENTITIES_JSON}, ${FACTORS_JSON}`,
      [at, at, user.id]
    )).rows[0] as Row)
    await audit(db, updated.user, "login", "account", new Date(), { provider: "email" })
    return { refreshToken: token, signedIn: updated }
  })
  return {
    user: signedIn.user,
    identities: signedIn.identities,
    sessionId,
    refreshToken,
    amr: [{ method, timestamp: Math.floor(at.getTime() / 1000) }]
  }
}

// --- POST /signup (autoconfirm) -----------------------------------------------------------------------------------

export const signupSql = async (
  pool: pg.Pool,
  crypto: Crypto,
  input: { readonly email: string; readonly password: string }
): Promise<StartedSession | "exists"> => {
  const email = input.email.toLowerCase()
  if (await findUserByEmail(pool, email) !== undefined) return "exists"
  const encrypted = await crypto.hashPassword(input.password)
  const at = new Date()
  const id = randomUUID()
  const user = await transaction(pool, async (db) => {
    const inserted = (await db.query(
      `INSERT INTO "auth"."users" ("instance_id","id","aud","role","email","phone","encrypted_password","email_confirmed_at","phone_confirmed_at","raw_app_meta_data","raw_user_meta_data","is_anonymous","is_sso_user","created_at","updated_at","confirmation_token","recovery_token","email_change_token_new","email_change_token_current","email_change","email_change_confirm_status","phone_change","phone_change_token","reauthentication_token") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24) RETURNING *`,
      [INSTANCE_ID, id, "authenticated", "authenticated", email, null, encrypted, at, null,
        { provider: "email", providers: ["email"] },
        { sub: id, email, email_verified: true, phone_verified: false }, false, false, at, at, "", "", "", "", "", 0, "", "", ""]
    )).rows[0] as Row
    await db.query(
      `INSERT INTO "auth"."identities" ("id","provider_id","user_id","identity_data","provider","last_sign_in_at","created_at","updated_at") VALUES ($1,$2,$3,$4,$5,$6,$7,$8)`,
      [randomUUID(), id, id, { sub: id, email, email_verified: false, phone_verified: false }, "email", at, at, at]
    )
    await audit(db, inserted, "user_signedup", "team", new Date(), { provider: "email" })
    return inserted
  })
  return startSession(pool, crypto, user, "password")
}

// --- POST /token?grant_type=password ------------------------------------------------------------------------------

export const passwordGrantSql = async (
  pool: pg.Pool,
  crypto: Crypto,
  input: { readonly email: string; readonly password: string }
): Promise<StartedSession | "invalid"> => {
  const user = await findUserByEmail(pool, input.email)
  if (!(await crypto.checkPassword(input.password, user?.encrypted_password ?? undefined)) || user === undefined) {
    return "invalid"
  }
  return startSession(pool, crypto, user, "password")
}

// --- POST /token?grant_type=refresh_token -------------------------------------------------------------------------

// The refresh grant's two statements (RefreshTokensRepo.readForExchange and rotateChecked): an unlocked read of the
// token, its session, the current token, the next id and the user; then one atomic statement that re-checks on the
// locked rows and rotates. Gatehouse falls back to a locked transaction when either says no; the benchmark never does.
const UUID = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"

const READ_FOR_EXCHANGE = `
        SELECT u.*, ${IDENTITIES_JSON}, ${FACTORS_JSON},
          r.id::text AS gh_id, r.token AS gh_token, r.user_id AS gh_user_id, r.revoked AS gh_revoked,
          r.updated_at AS gh_updated_at, r.session_id AS gh_session_id,
          s.id AS gh_s_id, s.user_id AS gh_s_user_id, s.not_after AS gh_s_not_after,
          s.refresh_token_hmac_key AS gh_s_signed_key, s.refresh_token_counter IS NOT NULL AS gh_s_counted,
          s.oauth_client_id AS gh_s_client,
          (s.refresh_token_counter > r.id AND r.created_at < s.refreshed_at AT TIME ZONE 'UTC') AS gh_moved_on,
          c.id::text AS gh_c_id, c.token AS gh_c_token, c.parent AS gh_c_parent,
          nextval(pg_get_serial_sequence($1, 'id'))::text AS gh_next_id,
          u.id IS NOT NULL AS gh_u_found
        FROM "auth"."refresh_tokens" r
        LEFT JOIN "auth"."sessions" s ON s.id = r.session_id
        LEFT JOIN LATERAL (SELECT id, token, parent FROM "auth"."refresh_tokens"
          WHERE session_id = r.session_id AND revoked = false ORDER BY id DESC LIMIT 1) c ON true
        LEFT JOIN "auth"."users" u ON u.id = CASE WHEN r.user_id ~ $2 THEN r.user_id::uuid END
        WHERE r.token = $3`

const ROTATE_CHECKED = `
        WITH s AS MATERIALIZED (
          SELECT s.id FROM "auth"."sessions" s JOIN "auth"."users" u ON u.id = s.user_id
          WHERE s.id = $1 AND s.refresh_token_hmac_key IS NULL AND s.refresh_token_counter IS NULL
            AND s.oauth_client_id IS NULL AND (s.not_after IS NULL OR s.not_after > $2)
            AND (u.banned_until IS NULL OR u.banned_until <= $3)
          FOR UPDATE OF s
        ), r AS MATERIALIZED (
          SELECT k.id FROM s JOIN LATERAL (
            SELECT id FROM "auth"."refresh_tokens" WHERE id = $4 AND session_id = s.id AND revoked = false FOR UPDATE
          ) k ON true
        ), revoked AS (
          UPDATE "auth"."refresh_tokens" SET revoked = true, updated_at = $5 WHERE id = (SELECT id FROM r) RETURNING token
        ), child AS (
          INSERT INTO "auth"."refresh_tokens" (instance_id, id, token, user_id, revoked, created_at, updated_at, parent, session_id)
          SELECT $6, $7, $8, $9, false, $10, $11, revoked.token, $12
          FROM revoked
        ), touched AS (
          UPDATE "auth"."sessions" SET refreshed_at = $13, updated_at = $14
          WHERE id = $15 AND EXISTS (SELECT 1 FROM revoked)
        ), audited AS (
          INSERT INTO "auth"."audit_log_entries" (instance_id, id, payload, created_at, ip_address)
          SELECT $16, v.id, v.payload, v.created_at, v.ip_address
          FROM revoked, (VALUES ($17::uuid, $18::json, $19::timestamptz, $20::varchar),($21::uuid, $22::json, $23::timestamptz, $24::varchar)) AS v (id, payload, created_at, ip_address)
        ), claims AS (
          SELECT c.authentication_method, c.updated_at FROM s JOIN LATERAL (
            SELECT authentication_method, updated_at FROM "auth"."mfa_amr_claims" WHERE session_id = s.id FOR SHARE
          ) c ON true
        )
        SELECT (SELECT count(*) FROM revoked)::int AS rotated,
          COALESCE((SELECT json_agg(json_build_array(authentication_method, floor(extract(epoch FROM updated_at))::bigint)
            ORDER BY updated_at DESC, authentication_method) FROM claims), '[]'::json) AS amr`

/** The happy path only: the benchmark always presents the newest token of its chain. */
export const refreshGrantSql = async (
  pool: pg.Pool,
  crypto: Crypto,
  presented: { readonly digest: string }
): Promise<StartedSession | "invalid"> => {
  const at = new Date()
  const read = (await pool.query(READ_FOR_EXCHANGE, ["auth.refresh_tokens", UUID, presented.digest])).rows[0] as Row | undefined
  if (read === undefined) return "invalid"
  const {
    gh_c_id: _c, gh_c_parent: _cp, gh_c_token: _ct, gh_id, gh_moved_on, gh_next_id, gh_revoked, gh_s_client, gh_s_counted, gh_s_id,
    gh_s_not_after, gh_s_signed_key, gh_s_user_id, gh_session_id: _sid, gh_token: _t, gh_u_found, gh_updated_at: _u, gh_user_id,
    ...userRow
  } = read
  const { identities, user } = withIdentities(userRow)
  // What Gatehouse checks before the rotation (RefreshRules.exchangeDetour); the benchmark's tokens pass them all.
  if (
    gh_revoked !== false || gh_s_id === null || gh_u_found !== true || gh_user_id !== user.id || gh_s_user_id !== user.id ||
    (user.banned_until !== null && user.banned_until.getTime() > at.getTime()) ||
    (gh_s_not_after !== null && gh_s_not_after.getTime() <= at.getTime()) ||
    gh_s_signed_key !== null || gh_s_counted === true || gh_moved_on === true || gh_s_client !== null
  ) {
    return "invalid"
  }
  const next = crypto.refreshToken(gh_s_id, gh_next_id)
  const logged = new Date()
  const rotated = (await pool.query(ROTATE_CHECKED, [
    gh_s_id, at, at, gh_id, at, INSTANCE_ID, gh_next_id, next.digest, user.id, at, at, gh_s_id, at, at, gh_s_id, INSTANCE_ID,
    randomUUID(), auditPayload(user, "token_revoked", "token"), logged, "",
    randomUUID(), auditPayload(user, "token_refreshed", "token"), logged, ""
  ])).rows[0] as Row
  if (rotated.rotated === 0) return "invalid"
  const amr = (rotated.amr as ReadonlyArray<readonly [string, number]>).map(([method, timestamp]) => ({ method, timestamp: Number(timestamp) }))
  return { user, identities, sessionId: gh_s_id as string, refreshToken: next.token, amr }
}

// --- GET /user ------------------------------------------------------------------------------------------------------

export const getUserSql = async (
  pool: pg.Pool,
  claims: { readonly userId: string; readonly sessionId: string }
): Promise<{ readonly user: Row; readonly identities: ReadonlyArray<Row> } | "no-session"> => {
  const row = (await pool.query(
    `
        SELECT u.*, (SELECT json_build_array(s.aal, s.factor_id) FROM "auth"."sessions" s WHERE s.id = $1 AND s.user_id = u.id)
          AS session_json, ${IDENTITIES_JSON}, ${FACTORS_JSON}
        FROM "auth"."users" u WHERE u.id = $2`,
    [claims.sessionId, claims.userId]
  )).rows[0] as Row | undefined
  if (row === undefined || row.session_json === null) return "no-session"
  const { session_json: _session, ...user } = row
  return withIdentities(user)
}

// --- IAM Login (gRPC) -----------------------------------------------------------------------------------------------

export const iamLoginSql = async (
  pool: pg.Pool,
  checkPassword: Crypto["checkPassword"],
  input: { readonly username: string; readonly password: string },
  refresh: { readonly jti: string; readonly family: string; readonly expiresAt: Date }
): Promise<{ readonly account: Row; readonly roles: ReadonlyArray<string> } | "invalid"> => {
  const account = (await pool.query(`SELECT * FROM "iam"."users" WHERE username = $1`, [input.username])).rows[0] as Row | undefined
  if (!(await checkPassword(input.password, account?.password_hash)) || account === undefined) return "invalid"
  await pool.query(
    `INSERT INTO "iam"."refresh_tokens" ("jti","family_id","user_id","parent_jti","expires_at") VALUES ($1,$2,$3,$4,$5)`,
    [refresh.jti, refresh.family, account.id, null, refresh.expiresAt]
  )
  const roles = (await pool.query(
    `
        SELECT r.name FROM "iam"."user_roles" ur JOIN "iam"."roles" r ON r.id = ur.role_id
        WHERE ur.user_id = $1 ORDER BY r.name`,
    [account.id]
  )).rows.map((r: Row) => r.name as string)
  return { account, roles }
}
