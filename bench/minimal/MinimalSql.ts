/**
 * ★ The minimal server's SQL: for each scenario, the statements Gatehouse ran for one request, in its order, as
 * PostgreSQL logged them (log_statement=all, one request of each kind against `node dist/main.js`). Keep each
 * block in step with Gatehouse: `npm run bench -- --sql` prints the statements per request of both sides, and the
 * results table shows them for every scenario, so a change on one side shows up as a mismatch.
 *
 * Measured on Gatehouse 0.1.0 after issue 13's round-trip work (the identities ride with the user as one JSON
 * array; a rotation locks, reads and writes in six statements):
 *   POST /signup (autoconfirm)       14 = 1 + BEGIN 3 COMMIT + BEGIN 5 COMMIT
 *   POST /token password              9 = 1 + BEGIN 5 COMMIT
 *   POST /token refresh_token         8 = BEGIN 6 COMMIT
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

const dateOrNull = (text: string | null): Date | null => (text === null ? null : new Date(text))

/** Splits a row selected with IDENTITIES_JSON into the user and its identity rows. */
const withIdentities = (row: Row): { readonly user: Row; readonly identities: ReadonlyArray<Row> } => {
  const { identities_json, ...user } = row
  return {
    user,
    identities: (identities_json as ReadonlyArray<Row>).map((i) => ({
      ...i,
      last_sign_in_at: dateOrNull(i.last_sign_in_at),
      created_at: dateOrNull(i.created_at),
      updated_at: dateOrNull(i.updated_at)
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
    `INSERT INTO "auth"."refresh_tokens" ("id","token","user_id","revoked","created_at","updated_at","parent","session_id") VALUES ($1,$2,$3,$4,$5,$6,$7,$8)`,
    [row.id, row.digest, row.userId, false, row.at, row.at, row.parent, row.sessionId]
  )

const upsertAmrClaim = (db: pg.PoolClient, sessionId: string, method: string, at: Date) =>
  db.query(
    `INSERT INTO "auth"."mfa_amr_claims" ("session_id","created_at","updated_at","authentication_method","id") VALUES ($1,$2,$3,$4,$5)
      ON CONFLICT (session_id, authentication_method) DO UPDATE SET updated_at = EXCLUDED.updated_at`,
    [sessionId, at, at, method, randomUUID()]
  )

/** A new session for a user who just signed in (BEGIN, 5 statements, COMMIT); the identities come with the user. */
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
    const updated = withIdentities((await db.query(
      `
        UPDATE "auth"."users" u SET last_sign_in_at = $1, updated_at = $2 WHERE id = $3
        RETURNING u.*, ${IDENTITIES_JSON}`,
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
  return transaction(pool, async (db) => {
    const session = (await db.query(
      `
        SELECT r.session_id, s.id, s.not_after FROM "auth"."refresh_tokens" r
        LEFT JOIN LATERAL (SELECT id, not_after FROM "auth"."sessions" WHERE id = r.session_id FOR UPDATE) s ON true
        WHERE r.token = $1`,
      [presented.digest]
    )).rows[0] as Row | undefined
    if (session === undefined || session.id === null) return "invalid" as const
    const token = (await db.query(
      `
        SELECT r.id::text AS id, r.token, r.user_id, r.revoked, r.updated_at, r.session_id,
          c.id::text AS current_id, c.parent AS current_parent,
          nextval(pg_get_serial_sequence($1, 'id'))::text AS next_id
        FROM "auth"."refresh_tokens" r
        LEFT JOIN LATERAL (SELECT id, parent FROM "auth"."refresh_tokens"
          WHERE session_id = r.session_id AND revoked = false ORDER BY id DESC LIMIT 1) c ON true
        WHERE r.token = $2 FOR UPDATE OF r`,
      ["auth.refresh_tokens", presented.digest]
    )).rows[0] as Row
    const { identities, user } = withIdentities((await db.query(
      `
        SELECT u.*, true AS session_exists,
          ${IDENTITIES_JSON}
        FROM "auth"."users" u WHERE u.id = $1`,
      [token.user_id]
    )).rows[0] as Row)
    if (token.revoked === true || token.current_id !== token.id) return "invalid" as const
    const next = crypto.refreshToken(session.id, token.next_id)
    await db.query(
      `
        WITH revoked AS (
          UPDATE "auth"."refresh_tokens" SET revoked = true, updated_at = $1 WHERE id = $2
        )
        INSERT INTO "auth"."refresh_tokens" ("id","token","user_id","revoked","created_at","updated_at","parent","session_id") VALUES ($3,$4,$5,$6,$7,$8,$9,$10)`,
      [at, token.id, token.next_id, next.digest, user.id, false, at, at, presented.digest, session.id]
    )
    const amr = (await db.query(
      `
        WITH touched AS (
          UPDATE "auth"."sessions" SET refreshed_at = $1, updated_at = $2 WHERE id = $3
        ), claimed AS (
          INSERT INTO "auth"."mfa_amr_claims" (session_id, created_at, updated_at, authentication_method, id)
          VALUES ($4, $5, $6, $7, $8)
          ON CONFLICT (session_id, authentication_method) DO UPDATE SET updated_at = EXCLUDED.updated_at
        )
        SELECT authentication_method, updated_at FROM "auth"."mfa_amr_claims"
          WHERE session_id = $9 AND authentication_method <> $10
        UNION ALL SELECT $11, $12::timestamptz
        ORDER BY 2 DESC, 1`,
      [at, at, session.id, session.id, at, at, "token_refresh", randomUUID(), session.id, "token_refresh", "token_refresh", at]
    )).rows.map((r: Row) => ({ method: r.authentication_method as string, timestamp: Math.floor(r.updated_at.getTime() / 1000) }))
    const logged = new Date()
    await db.query(
      `INSERT INTO "auth"."audit_log_entries" (instance_id, id, payload, created_at, ip_address)
        VALUES ($1, $2, $3::json, $4, $5), ($6, $7, $8::json, $9, $10)`,
      [INSTANCE_ID, randomUUID(), auditPayload(user, "token_revoked", "token"), logged, "",
        INSTANCE_ID, randomUUID(), auditPayload(user, "token_refreshed", "token"), logged, ""]
    )
    return { user, identities, sessionId: session.id as string, refreshToken: next.token, amr }
  })
}

// --- GET /user ------------------------------------------------------------------------------------------------------

export const getUserSql = async (
  pool: pg.Pool,
  claims: { readonly userId: string; readonly sessionId: string }
): Promise<{ readonly user: Row; readonly identities: ReadonlyArray<Row> } | "no-session"> => {
  const row = (await pool.query(
    `
        SELECT u.*, EXISTS (SELECT 1 FROM "auth"."sessions" s WHERE s.id = $1 AND s.user_id = u.id) AS session_exists,
          ${IDENTITIES_JSON}
        FROM "auth"."users" u WHERE u.id = $2`,
    [claims.sessionId, claims.userId]
  )).rows[0] as Row | undefined
  if (row === undefined || row.session_exists !== true) return "no-session"
  return withIdentities(row)
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
