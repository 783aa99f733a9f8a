import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Duration, Effect, Redacted } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { authTables } from "../AuthTables.js"
import { AuthError } from "../domain/AuthError.js"
import { isBanned, type UserRow } from "../domain/UserRow.js"
import { decideRefresh, type RotationPolicy } from "./RefreshRules.js"
import { deriveRefreshToken, digestRefreshToken, isWellFormedRefreshToken, refreshTokenKey } from "./RefreshTokenCodec.js"

/** amr methods (GoTrue's names) a session can be started or extended with. */
export type AuthMethod = "password" | "anonymous" | "otp" | "magiclink" | "email/signup" | "token_refresh" | "oauth"

export interface AmrEntry {
  readonly method: string
  readonly timestamp: number
}

export interface StartedSession {
  readonly sessionId: string
  readonly refreshToken: string
  /** The user as the session left it (last_sign_in_at set). */
  readonly user: UserRow
  /** The session's amr claims, most recent first, for the access token. */
  readonly amr: ReadonlyArray<AmrEntry>
}

export type RefreshedSession = StartedSession

export type LogoutScope = "global" | "local" | "others"

interface TokenRow {
  readonly id: string
  readonly token: string
  readonly user_id: string | null
  readonly revoked: boolean | null
  readonly updated_at: Date | null
  readonly session_id: string | null
}

const notFound = AuthError.of(400, "refresh_token_not_found", "Invalid Refresh Token: Refresh Token Not Found")
const alreadyUsed = AuthError.of(400, "refresh_token_already_used", "Invalid Refresh Token: Already Used")

/**
 * Sessions and their refresh tokens (spec §3). Each token exchange runs in one transaction holding row locks on
 * the token's session and on the presented token, so requests or instances racing on one token queue on those
 * locks: exactly one rotates it, and the others find it revoked and, within the reuse interval, receive the same
 * child.
 */
export class Sessions extends Effect.Service<Sessions>()("auth/Sessions", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const t = authTables(config.db.namespace)
    const key = refreshTokenKey(Redacted.value(config.jwt.secret))
    const policy: RotationPolicy = {
      rotationEnabled: config.security.refreshTokenRotationEnabled,
      reuseIntervalMillis: Duration.toMillis(config.security.refreshTokenReuseInterval)
    }

    const insertToken = (sessionId: string, userId: string, parent: string | null, now: Date) =>
      Effect.gen(function*() {
        const [next] = yield* sql<{ id: string }>`SELECT nextval(pg_get_serial_sequence(${t.refresh_tokens}, 'id'))::text AS id`
        const token = deriveRefreshToken(key, sessionId, next!.id)
        yield* sql`INSERT INTO ${sql(t.refresh_tokens)} ${sql.insert({
          id: next!.id,
          token: digestRefreshToken(token),
          user_id: userId,
          revoked: false,
          created_at: now,
          updated_at: now,
          parent,
          session_id: sessionId
        })}`
        return token
      })

    const addAmr = (sessionId: string, method: AuthMethod, now: Date) =>
      sql`INSERT INTO ${sql(t.mfa_amr_claims)} ${sql.insert({
        session_id: sessionId,
        created_at: now,
        updated_at: now,
        authentication_method: method,
        id: randomUUID()
      })}
      ON CONFLICT (session_id, authentication_method) DO UPDATE SET updated_at = EXCLUDED.updated_at`

    /** The session's amr claims, most recent first, as the access token carries them. */
    const readAmr = (sessionId: string) =>
      Effect.map(
        sql<{ authentication_method: string; updated_at: Date }>`
          SELECT authentication_method, updated_at FROM ${sql(t.mfa_amr_claims)}
          WHERE session_id = ${sessionId} ORDER BY updated_at DESC, authentication_method`,
        (rows): ReadonlyArray<AmrEntry> =>
          rows.map((r) => ({ method: r.authentication_method, timestamp: Math.floor(r.updated_at.getTime() / 1000) }))
      )

    /** Starts a session for a user who just authenticated; run inside the caller's transaction. */
    const start = Effect.fn("Sessions.start")(function*(
      userId: string,
      method: AuthMethod,
      now: Date
    ): Effect.fn.Return<StartedSession, SqlError> {
      const sessionId = randomUUID()
      yield* sql`INSERT INTO ${sql(t.sessions)} ${sql.insert({
        id: sessionId,
        user_id: userId,
        created_at: now,
        updated_at: now,
        aal: "aal1",
        refreshed_at: now
      })}`
      const refreshToken = yield* insertToken(sessionId, userId, null, now)
      yield* addAmr(sessionId, method, now)
      const [user] = yield* sql<UserRow>`
        UPDATE ${sql(t.users)} SET last_sign_in_at = ${now}, updated_at = ${now} WHERE id = ${userId} RETURNING *`
      // A new session has exactly the claim just written: no need to read it back.
      return { sessionId, refreshToken, user: user!, amr: [{ method, timestamp: Math.floor(now.getTime() / 1000) }] }
    }, Effect.orDie)

    type Outcome =
      | { readonly _tag: "Issued"; readonly session: RefreshedSession }
      | { readonly _tag: "Refused"; readonly error: AuthError }

    const exchange = (token: string, now: Date) =>
      Effect.gen(function*() {
        const digest = digestRefreshToken(token)
        // The session row is locked before the token row. Logout (DELETE on sessions, cascading to the tokens) and
        // reuse detection (revoking a session's other tokens) lock in that order; locking the token first
        // deadlocked against both, and PostgreSQL aborted one side.
        const [located] = yield* sql<{ session_id: string | null }>`
          SELECT session_id FROM ${sql(t.refresh_tokens)} WHERE token = ${digest}`
        if (located === undefined) return { _tag: "Refused", error: notFound } as Outcome
        const [session] = located.session_id === null
          ? []
          : yield* sql<{ id: string; not_after: Date | null }>`
            SELECT id, not_after FROM ${sql(t.sessions)} WHERE id = ${located.session_id} FOR UPDATE`
        const [row] = yield* sql<TokenRow>`
          SELECT id::text AS id, token, user_id, revoked, updated_at, session_id
          FROM ${sql(t.refresh_tokens)} WHERE token = ${digest} FOR UPDATE`
        if (row === undefined || row.user_id === null) return { _tag: "Refused", error: notFound } as Outcome
        const [user] = yield* sql<UserRow>`SELECT * FROM ${sql(t.users)} WHERE id = ${row.user_id}::uuid`
        if (user === undefined) return { _tag: "Refused", error: notFound } as Outcome
        if (isBanned(user, now)) {
          return { _tag: "Refused", error: AuthError.of(400, "user_banned", "Invalid Refresh Token: User Banned") } as Outcome
        }
        if (session === undefined) {
          yield* sql`DELETE FROM ${sql(t.refresh_tokens)} WHERE id = ${row.id}`
          return {
            _tag: "Refused",
            error: AuthError.of(400, "session_not_found", "Invalid Refresh Token: No Valid Session Found")
          } as Outcome
        }
        if (session.not_after !== null && session.not_after.getTime() <= now.getTime()) {
          return {
            _tag: "Refused",
            error: AuthError.of(400, "session_expired", "Invalid Refresh Token: Session Expired")
          } as Outcome
        }
        const [current] = yield* sql<{ id: string; parent: string | null }>`
          SELECT id::text AS id, parent FROM ${sql(t.refresh_tokens)}
          WHERE session_id = ${session.id} AND revoked = false ORDER BY id DESC LIMIT 1`
        const decision = decideRefresh(
          { revoked: row.revoked === true, revokedAt: row.updated_at ?? new Date(0) },
          current !== undefined && current.parent === row.token,
          now,
          policy
        )
        switch (decision._tag) {
          case "Rotate": {
            yield* sql`UPDATE ${sql(t.refresh_tokens)} SET revoked = true, updated_at = ${now} WHERE id = ${row.id}`
            const child = yield* insertToken(session.id, user.id, row.token, now)
            yield* sql`UPDATE ${sql(t.sessions)} SET refreshed_at = ${now}, updated_at = ${now} WHERE id = ${session.id}`
            yield* addAmr(session.id, "token_refresh", now)
            const amr = yield* readAmr(session.id)
            return { _tag: "Issued", session: { user, sessionId: session.id, refreshToken: child, amr } } as Outcome
          }
          case "ReturnChild":
            return {
              _tag: "Issued",
              session: {
                user,
                sessionId: session.id,
                refreshToken: deriveRefreshToken(key, session.id, current!.id),
                amr: yield* readAmr(session.id)
              }
            } as Outcome
          case "ReuseDetected": {
            yield* sql`
              WITH RECURSIVE descendants AS (
                SELECT token FROM ${sql(t.refresh_tokens)} WHERE parent = ${row.token}
                UNION
                SELECT r.token FROM ${sql(t.refresh_tokens)} r JOIN descendants d ON r.parent = d.token
              )
              UPDATE ${sql(t.refresh_tokens)} SET revoked = true, updated_at = ${now}
              WHERE revoked = false AND token IN (SELECT token FROM descendants)`
            return { _tag: "Refused", error: alreadyUsed } as Outcome
          }
          case "AlreadyUsed":
            return { _tag: "Refused", error: alreadyUsed } as Outcome
        }
      })

    /**
     * Exchanges a refresh token. A refusal that revoked tokens (reuse detection) is still committed: the
     * transaction returns the refusal as a value and the error is raised only after COMMIT.
     */
    const refresh = Effect.fn("Sessions.refresh")(function*(
      token: string,
      now: Date
    ): Effect.fn.Return<RefreshedSession, AuthError, never> {
      if (!isWellFormedRefreshToken(token)) return yield* AuthError.validation("Refresh token is not valid")
      const outcome = yield* sql.withTransaction(exchange(token, now)).pipe(Effect.orDie)
      return outcome._tag === "Issued" ? outcome.session : yield* outcome.error
    })



    /** Deleting sessions cascades to their refresh tokens and amr claims. */
    const logout = Effect.fn("Sessions.logout")(function*(
      userId: string,
      sessionId: string | undefined,
      scope: LogoutScope
    ): Effect.fn.Return<void, SqlError> {
      // A token without a session_id can only mean "all of them", as in GoTrue.
      if (sessionId === undefined || scope === "global") {
        yield* sql`DELETE FROM ${sql(t.sessions)} WHERE user_id = ${userId}`
      } else if (scope === "local") {
        yield* sql`DELETE FROM ${sql(t.sessions)} WHERE id = ${sessionId} AND user_id = ${userId}`
      } else {
        yield* sql`DELETE FROM ${sql(t.sessions)} WHERE user_id = ${userId} AND id <> ${sessionId}`
      }
    }, Effect.orDie)

    return { start, refresh, logout } as const
  })
}) {}
