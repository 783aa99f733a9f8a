/**
 * ★ The minimal server's SQL: for each scenario, the statements Gatehouse ran for one request, in its order, as
 * PostgreSQL logged them (log_statement=all, one request of each kind against `node dist/main.js`). Keep each
 * block in step with Gatehouse: `npm run bench -- --sql` prints the statements per request of both sides, and the
 * results table shows them for every scenario, so a change on one side shows up as a mismatch.
 *
 * Measured on Gatehouse 0.1.0 (commit 1206061):
 *   POST /signup (autoconfirm)       15 = 1 + BEGIN 3 COMMIT + BEGIN 6 COMMIT + 1
 *   POST /token password             10 = 1 + BEGIN 6 COMMIT + 1
 *   POST /token refresh_token        16 = BEGIN 13 COMMIT + 1
 *   GET /user                         2
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

const identitiesOf = async (db: pg.Pool, userId: string): Promise<ReadonlyArray<Row>> =>
  (await db.query(
    `SELECT id, provider_id, user_id, identity_data, provider, last_sign_in_at, created_at,
        updated_at, email FROM "auth"."identities" WHERE user_id = $1 ORDER BY created_at, id`,
    [userId]
  )).rows

const audit = (db: pg.PoolClient, actor: Row, action: string, logType: string, at: Date, traits?: object) =>
  db.query(
    `INSERT INTO "auth"."audit_log_entries" (instance_id, id, payload, created_at, ip_address)
        VALUES ($1, $2, $3::json, $4, $5)`,
    [INSTANCE_ID, randomUUID(), JSON.stringify({
      actor_id: actor.id,
      actor_username: actor.email ?? "",
      actor_via_sso: false,
      action,
      log_type: logType,
      ...(traits === undefined ? {} : { traits })
    }), at, ""]
  )

const nextRefreshTokenId = async (db: pg.PoolClient): Promise<string> =>
  (await db.query(`SELECT nextval(pg_get_serial_sequence($1, 'id'))::text AS id`, ["auth.refresh_tokens"])).rows[0].id

const insertRefreshToken = (db: pg.PoolClient, row: {
  id: string; digest: string; userId: string; at: Date; parent: string | null; sessionId: string
}) =>
  db.query(
    `INSERT INTO "auth"."refresh_tokens" ("id","token","user_id","revoked","created_at","updated_at","parent","session_id") VALUES ($1,$2,$3,$4,$5,$6,$7,$8)`,
    [row.id, row.digest, row.userId, false, row.at, row.at, row.parent, row.sessionId]
  )

const upsertAmrClaim = (db: pg.PoolClient, sessionId: string, method: string, at: Date) =>
  db.query(
    `INSERT INTO "auth"."mfa_amr_claims" ("session_id","created_at","updated_at","authentication_method","id") VALUES ($1,$2,$3,$4,$5)
      ON CONFLICT (session_id, authentication_method) DO UPDATE SET updated_at = EXCLUDED.updated_at`,
    [sessionId, at, at, method, randomUUID()]
  )

/** A new session for a user who just signed in (BEGIN, 6 statements, COMMIT), then the identities (1). */
const startSession = async (pool: pg.Pool, crypto: Crypto, user: Row, method: string): Promise<StartedSession> => {
  const at = new Date()
  const sessionId = randomUUID()
  const { refreshToken, signedIn } = await transaction(pool, async (db) => {
    await db.query(
      `INSERT INTO "auth"."sessions" ("id","user_id","created_at","updated_at","aal","refreshed_at") VALUES ($1,$2,$3,$4,$5,$6)`,
      [sessionId, user.id, at, at, "aal1", at]
    )
    const id = await nextRefreshTokenId(db)
    const { digest, token } = crypto.refreshToken(sessionId, id)
    await insertRefreshToken(db, { id, digest, userId: user.id, at, parent: null, sessionId })
    await upsertAmrClaim(db, sessionId, method, at)
    const updated = (await db.query(
      `
        UPDATE "auth"."users" SET last_sign_in_at = $1, updated_at = $2 WHERE id = $3 RETURNING *`,
      [at, at, user.id]
    )).rows[0] as Row
    await audit(db, updated, "login", "account", new Date(), { provider: "email" })
    return { refreshToken: token, signedIn: updated }
  })
  const identities = await identitiesOf(pool, user.id)
  return {
    user: signedIn,
    identities,
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
      `INSERT INTO "auth"."users" ("instance_id","id","aud","role","email","phone","encrypted_password","email_confirmed_at","phone_confirmed_at","raw_app_meta_data","raw_user_meta_data","is_anonymous","created_at","updated_at") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14) RETURNING *`,
      [INSTANCE_ID, id, "authenticated", "authenticated", email, null, encrypted, at, null,
        { provider: "email", providers: ["email"] },
        { sub: id, email, email_verified: true, phone_verified: false }, false, at, at]
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

/** The happy path only: the benchmark always presents the newest token of its chain. */
export const refreshGrantSql = async (
  pool: pg.Pool,
  crypto: Crypto,
  presented: { readonly digest: string }
): Promise<StartedSession | "invalid"> => {
  const at = new Date()
  const rotated = await transaction(pool, async (db) => {
    const found = (await db.query(
      `
        SELECT session_id FROM "auth"."refresh_tokens" WHERE token = $1`,
      [presented.digest]
    )).rows[0] as Row | undefined
    if (found === undefined || found.session_id === null) return "invalid" as const
    const session = (await db.query(
      `
        SELECT id, not_after FROM "auth"."sessions" WHERE id = $1 FOR UPDATE`,
      [found.session_id]
    )).rows[0] as Row | undefined
    if (session === undefined) return "invalid" as const
    const token = (await db.query(
      `
        SELECT id::text AS id, token, user_id, revoked, updated_at, session_id
        FROM "auth"."refresh_tokens" WHERE token = $1 FOR UPDATE`,
      [presented.digest]
    )).rows[0] as Row
    const user = (await db.query(`SELECT * FROM "auth"."users" WHERE id = $1::uuid`, [token.user_id])).rows[0] as Row
    const current = (await db.query(
      `
        SELECT id::text AS id, parent FROM "auth"."refresh_tokens"
        WHERE session_id = $1 AND revoked = false ORDER BY id DESC LIMIT 1`,
      [session.id]
    )).rows[0] as Row | undefined
    if (token.revoked === true || current?.id !== token.id) return "invalid" as const
    await db.query(`UPDATE "auth"."refresh_tokens" SET revoked = true, updated_at = $1 WHERE id = $2`, [at, token.id])
    const id = await nextRefreshTokenId(db)
    const next = crypto.refreshToken(session.id, id)
    await insertRefreshToken(db, { id, digest: next.digest, userId: user.id, at, parent: presented.digest, sessionId: session.id })
    await db.query(`UPDATE "auth"."sessions" SET refreshed_at = $1, updated_at = $2 WHERE id = $3`, [at, at, session.id])
    await upsertAmrClaim(db, session.id, "token_refresh", at)
    await audit(db, user, "token_revoked", "token", new Date())
    await audit(db, user, "token_refreshed", "token", new Date())
    const amr = (await db.query(
      `
        SELECT authentication_method, updated_at FROM "auth"."mfa_amr_claims"
        WHERE session_id = $1 ORDER BY updated_at DESC, authentication_method`,
      [session.id]
    )).rows.map((r: Row) => ({ method: r.authentication_method as string, timestamp: Math.floor(r.updated_at.getTime() / 1000) }))
    return { user, sessionId: session.id as string, refreshToken: next.token, amr }
  })
  if (rotated === "invalid") return rotated
  return { ...rotated, identities: await identitiesOf(pool, rotated.user.id) }
}

// --- GET /user ------------------------------------------------------------------------------------------------------

export const getUserSql = async (
  pool: pg.Pool,
  claims: { readonly userId: string; readonly sessionId: string }
): Promise<{ readonly user: Row; readonly identities: ReadonlyArray<Row> } | "no-session"> => {
  const user = (await pool.query(
    `
        SELECT u.*, EXISTS (SELECT 1 FROM "auth"."sessions" s WHERE s.id = $1 AND s.user_id = u.id) AS session_exists
        FROM "auth"."users" u WHERE u.id = $2`,
    [claims.sessionId, claims.userId]
  )).rows[0] as Row | undefined
  if (user === undefined || user.session_exists !== true) return "no-session"
  return { user, identities: await identitiesOf(pool, claims.userId) }
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
