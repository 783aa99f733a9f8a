import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import type { FactorRow } from "../domain/FactorRow.js"
import type { IdentityRow, UserRow } from "../domain/UserRow.js"
import { IdentitiesRepo } from "../users/IdentitiesRepo.js"
import { type FactorJson, type IdentityJson, relationsJson, UsersRepo, withRelations } from "../users/UsersRepo.js"
import { traced } from "../../platform/Traced.js"
import { onPool } from "../../platform/sql/PoolStatements.js"

export interface AmrEntry {
  readonly method: string
  readonly timestamp: number
}

export interface SessionsRepoShape {
  readonly insert: (session: NewSession) => Effect.Effect<void>
  /** Stamps the user's last sign-in and returns the user as it now is, with its identities and factors. */
  readonly signedIn: (userId: string, now: Date) => Effect.Effect<UserWithRelations>
  /**
   * The session row, locked until the transaction ends. The exchange locks it through its token instead
   * (RefreshTokensRepo.lockSessionOf); RefreshTokensRepo.Test asks this whether a token's session still exists.
   */
  readonly lockForRefresh: (id: string) => Effect.Effect<Option.Option<{ readonly id: string; readonly not_after: Date | null }>>
  /**
   * The session row locked until the transaction ends, with what GoTrue's signed refresh tokens need of it: the
   * exchange of such a token locks its session first, as every exchange does.
   */
  readonly lockSigned: (id: string) => Effect.Effect<Option.Option<SignedSessionRow>>
  /**
   * A rotation's session writes in one statement: stamps the session refreshed and returns its amr claims, most
   * recent first. A refresh adds no claim: GoTrue's tokens keep the methods the session was signed in and stepped
   * up with, so the claims (and the level they give) survive any number of refreshes unchanged. With
   * `signedCounter`, the session's refresh_token_counter is set to it too (a GoTrue signed token exchanged).
   */
  /**
   * A refresh: the session's refreshed_at, and its signed-token counter (`signedCounter`), or, with null, its key and
   * counter cleared (keys export-sessions wrote, once Gatehouse rotates the session on).
   */
  readonly refreshed: (id: string, now: Date, signedCounter?: bigint | null) => Effect.Effect<ReadonlyArray<AmrEntry>>
  /**
   * A verified second factor raises the session: records (or renews) the factor's amr claim, sets the row's aal2
   * and the factor that raised it, and returns the claims as they now are, most recent first.
   */
  readonly stepUp: (sessionId: string, method: string, factorId: string, now: Date) => Effect.Effect<ReadonlyArray<AmrEntry>>
  /** After a step-up: the user's sessions below aal2 end (GoTrue's rule; a session with no level is kept). */
  readonly deleteBelowAal2: (userId: string) => Effect.Effect<void>
  /**
   * A factor is gone: every session it raised loses that factor's claim and drops to aal1. Sessions raised by
   * another factor keep their level.
   */
  readonly downgradeForFactor: (factorId: string, method: string, now: Date) => Effect.Effect<void>
  /** Records (or renews) an amr claim of the session. */
  readonly addAmr: (sessionId: string, method: string, now: Date) => Effect.Effect<void>
  /** The session's amr claims, most recent first, as the access token carries them. */
  readonly amr: (sessionId: string) => Effect.Effect<ReadonlyArray<AmrEntry>>
  /**
   * The bearer check's one query: the user, whether the token's session still exists for that user (`sessionId`
   * undefined: no session to check), and the user's identities, oldest first, which GET /user answers with.
   */
  readonly findForSession: (
    userId: string,
    sessionId: string | undefined
  ) => Effect.Effect<Option.Option<SignedInUser>>
  /**
   * Deletes sessions of a user: all, only one, or all but one, and says how many. Their refresh tokens and amr
   * claims go with them.
   */
  readonly deleteForUser: (userId: string, which: { readonly only: string } | { readonly except: string } | "all") => Effect.Effect<number>
  /**
   * The user's sessions still in force at `now` (none past its not_after), most recently started first, at most
   * `limit` of them.
   */
  readonly listForUser: (userId: string, now: Date, limit: number) => Effect.Effect<ReadonlyArray<SessionSummary>>
}

export interface NewSession {
  readonly id: string
  readonly userId: string
  readonly now: Date
  readonly notAfter?: Date | null
  /** The client that signed in, as GoTrue records it on the row: its User-Agent and its address (an IP, or none). */
  readonly userAgent?: string | undefined
  readonly ip?: string | undefined
}

/** A session as its user (and an admin) may see it: GoTrue's columns, none of its keys or tokens. */
export interface SessionSummary {
  readonly id: string
  /** Null only on a row GoTrue wrote without it (an adopted database). */
  readonly created_at: Date | null
  readonly updated_at: Date | null
  readonly refreshed_at: Date | null
  readonly user_agent: string | null
  readonly ip: string | null
  readonly aal: string | null
  readonly not_after: Date | null
}

/** A session row as the exchange of a GoTrue signed refresh token reads it. */
export interface SignedSessionRow {
  readonly id: string
  readonly user_id: string
  readonly not_after: Date | null
  /** GoTrue's signing key for the session's tokens, as stored (NULL for a session GoTrue did not sign tokens for). */
  readonly refresh_token_hmac_key: string | null
  readonly refresh_token_counter: bigint | null
  readonly created_at: Date | null
  readonly refreshed_at: Date | null
  /** The OAuth client the session was started for, and its scopes (null for every other session). */
  readonly oauth_client_id: string | null
  readonly scopes: string | null
}

export interface UserWithRelations {
  readonly user: UserRow
  readonly identities: ReadonlyArray<IdentityRow>
  /** Every factor of the user, oldest first. */
  readonly factors: ReadonlyArray<FactorRow>
}

export interface SignedInUser extends UserWithRelations {
  readonly sessionExists: boolean
  /** The session row's level and the factor that raised it, when the token names a session that exists. */
  readonly session: { readonly aal: string | null; readonly factorId: string | null } | undefined
}

const amrOf = (claims: ReadonlyMap<string, ReadonlyMap<string, Date>>, sessionId: string): Array<AmrEntry> =>
  [...(claims.get(sessionId) ?? new Map<string, Date>())]
    .sort(([ma, a], [mb, b]) => b.getTime() - a.getTime() || (ma < mb ? -1 : ma > mb ? 1 : 0))
    .map(([method, at]) => ({ method, timestamp: Math.floor(at.getTime() / 1000) }))

/** The sessions and mfa_amr_claims tables, and the two statements on a session's user. */
export class SessionsRepo extends Effect.Service<SessionsRepo>()("auth/SessionsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)

    const insert = traced("SessionsRepo.insert")(function*(session: NewSession) {
      yield* sql`INSERT INTO ${sql(t.sessions)} ${sql.insert({
        id: session.id,
        user_id: session.userId,
        not_after: session.notAfter ?? null,
        created_at: session.now,
        updated_at: session.now,
        aal: "aal1",
        refreshed_at: session.now,
        user_agent: session.userAgent ?? null,
        ip: session.ip ?? null
      })}`
    }, Effect.orDie)

    const signedIn = traced("SessionsRepo.signedIn")(function*(userId: string, now: Date) {
      const [row] = yield* sql<UserRow & { readonly identities_json: ReadonlyArray<IdentityJson>; readonly factors_json: ReadonlyArray<FactorJson> }>`
        UPDATE ${sql(t.users)} u SET last_sign_in_at = ${now}, updated_at = ${now} WHERE id = ${userId}
        RETURNING u.*, ${relationsJson(sql, t, "u")}`
      return withRelations(row!) satisfies UserWithRelations
    }, Effect.orDie)

    const lockForRefresh = traced("SessionsRepo.lockForRefresh")(function*(id: string) {
      const [session] = yield* sql<{ id: string; not_after: Date | null }>`
        SELECT id, not_after FROM ${sql(t.sessions)} WHERE id = ${id} FOR UPDATE`
      return Option.fromNullable(session)
    }, Effect.orDie)

    // GoTrue made refreshed_at a timestamp without time zone (holding UTC), Gatehouse's 0002 a timestamptz: the
    // epoch of either is the instant, where reading the former as a Date would take it in the process's time zone.
    const lockSigned = traced("SessionsRepo.lockSigned")(function*(id: string) {
      const [row] = yield* sql<{
        id: string
        user_id: string
        not_after: Date | null
        refresh_token_hmac_key: string | null
        counter: string | null
        created_ms: number | null
        refreshed_ms: number | null
        oauth_client_id: string | null
        scopes: string | null
      }>`
        SELECT id, user_id, not_after, refresh_token_hmac_key, refresh_token_counter::text AS counter, oauth_client_id, scopes,
          (extract(epoch FROM created_at) * 1000)::float8 AS created_ms,
          (extract(epoch FROM refreshed_at) * 1000)::float8 AS refreshed_ms
        FROM ${sql(t.sessions)} WHERE id = ${id} FOR UPDATE`
      return Option.map(Option.fromNullable(row), ({ counter, created_ms, refreshed_ms, ...session }): SignedSessionRow => ({
        ...session,
        refresh_token_counter: counter === null ? null : BigInt(counter),
        created_at: created_ms === null ? null : new Date(created_ms),
        refreshed_at: refreshed_ms === null ? null : new Date(refreshed_ms)
      }))
    }, Effect.orDie)

    const claimsOf = (rows: ReadonlyArray<{ authentication_method: string; updated_at: Date }>) =>
      rows.map((r): AmrEntry => ({ method: r.authentication_method, timestamp: Math.floor(r.updated_at.getTime() / 1000) }))

    const refreshed = traced("SessionsRepo.refreshed")(function*(id: string, now: Date, signedCounter?: bigint | null) {
      const signed = signedCounter === undefined
        ? sql``
        : signedCounter === null
        ? sql`, refresh_token_hmac_key = NULL, refresh_token_counter = NULL`
        : sql`, refresh_token_counter = ${signedCounter.toString()}::bigint`
      const rows = yield* sql<{ authentication_method: string; updated_at: Date }>`
        WITH touched AS (
          UPDATE ${sql(t.sessions)} SET refreshed_at = ${now}, updated_at = ${now}${signed} WHERE id = ${id}
        )
        SELECT authentication_method, updated_at FROM ${sql(t.mfa_amr_claims)}
          WHERE session_id = ${id} ORDER BY updated_at DESC, authentication_method`
      return claimsOf(rows)
    }, Effect.orDie)

    // The claims a statement returns cannot see its own upsert, so the renewed claim is added to the others.
    const stepUp = traced("SessionsRepo.stepUp")(function*(sessionId: string, method: string, factorId: string, now: Date) {
      const rows = yield* sql<{ authentication_method: string; updated_at: Date }>`
        WITH raised AS (
          UPDATE ${sql(t.sessions)} SET aal = 'aal2', factor_id = ${factorId}, updated_at = ${now} WHERE id = ${sessionId}
        ), claimed AS (
          INSERT INTO ${sql(t.mfa_amr_claims)} (session_id, created_at, updated_at, authentication_method, id)
          VALUES (${sessionId}, ${now}, ${now}, ${method}, gen_random_uuid())
          ON CONFLICT (session_id, authentication_method) DO UPDATE SET updated_at = EXCLUDED.updated_at
        )
        SELECT authentication_method, updated_at FROM ${sql(t.mfa_amr_claims)}
          WHERE session_id = ${sessionId} AND authentication_method <> ${method}
        UNION ALL SELECT ${method}, ${now}::timestamptz
        ORDER BY 2 DESC, 1`
      return claimsOf(rows)
    }, Effect.orDie)

    const deleteBelowAal2 = traced("SessionsRepo.deleteBelowAal2")(function*(userId: string) {
      yield* sql`DELETE FROM ${sql(t.sessions)} WHERE user_id = ${userId} AND aal < 'aal2'`
    }, Effect.orDie)

    const downgradeForFactor = traced("SessionsRepo.downgradeForFactor")(function*(factorId: string, method: string, now: Date) {
      yield* sql`
        WITH lowered AS (
          UPDATE ${sql(t.sessions)} SET aal = 'aal1', factor_id = NULL, updated_at = ${now} WHERE factor_id = ${factorId}
          RETURNING id
        )
        DELETE FROM ${sql(t.mfa_amr_claims)} c USING lowered
        WHERE c.session_id = lowered.id AND c.authentication_method = ${method}`
    }, Effect.orDie)

    const addAmr = traced("SessionsRepo.addAmr")(function*(sessionId: string, method: string, now: Date) {
      yield* sql`INSERT INTO ${sql(t.mfa_amr_claims)} (session_id, created_at, updated_at, authentication_method, id)
      VALUES (${sessionId}, ${now}, ${now}, ${method}, gen_random_uuid())
      ON CONFLICT (session_id, authentication_method) DO UPDATE SET updated_at = EXCLUDED.updated_at`
    }, Effect.orDie)

    const amr = traced("SessionsRepo.amr")(function*(sessionId: string) {
      const rows = yield* sql<{ authentication_method: string; updated_at: Date }>`
        SELECT authentication_method, updated_at FROM ${sql(t.mfa_amr_claims)}
        WHERE session_id = ${sessionId} ORDER BY updated_at DESC, authentication_method`
      return rows.map((r): AmrEntry => ({ method: r.authentication_method, timestamp: Math.floor(r.updated_at.getTime() / 1000) }))
    }, Effect.orDie)

    // One round trip per authenticated request: the identities ride along as a JSON array, so GET /user needs
    // no second query.
    type SessionUserRow = UserRow & {
      /** [aal, factor_id] of the named session, NULL when it does not exist (for this user). */
      readonly session_json: readonly [string | null, string | null] | null
      readonly identities_json: ReadonlyArray<IdentityJson>
      readonly factors_json: ReadonlyArray<FactorJson>
    }
    // The session is read by a scalar subquery rather than a join: the statement is planned on every call, and a
    // join cost GET /user a fifth more PostgreSQL time than this (pgbench, simple protocol). Its text depends on no
    // value, so it is compiled once here: compiling the template's fragments again on every GET /user cost more CPU
    // than reading the rows it returns. Placeholders are numbered in order: the session id, then the user id.
    const sessionUserText = (withSession: boolean) =>
      sql`
        SELECT u.*, ${withSession
          ? sql`(SELECT json_build_array(s.aal, s.factor_id) FROM ${sql(t.sessions)} s WHERE s.id = ${""} AND s.user_id = u.id)`
          : sql`NULL`}
          AS session_json, ${relationsJson(sql, t, "u")}
        FROM ${sql(t.users)} u WHERE u.id = ${""}`.compile()[0]
    const withSessionText = sessionUserText(true)
    const withoutSessionText = sessionUserText(false)
    const findForSession = traced("SessionsRepo.findForSession")(function*(userId: string, sessionId: string | undefined) {
      const rows = yield* onPool(sql, sessionId === undefined
        ? sql.unsafe<SessionUserRow>(withoutSessionText, [userId])
        : sql.unsafe<SessionUserRow>(withSessionText, [sessionId, userId]))
      return Option.map(
        Option.fromNullable(rows[0]),
        ({ session_json, ...row }): SignedInUser => ({
          ...withRelations(row),
          sessionExists: sessionId === undefined || session_json !== null,
          session: session_json === null ? undefined : { aal: session_json[0], factorId: session_json[1] }
        })
      )
    }, Effect.orDie)

    const deleteForUser = traced("SessionsRepo.deleteForUser")(function*(
      userId: string,
      which: { readonly only: string } | { readonly except: string } | "all"
    ) {
      const gone = which === "all"
        ? yield* sql`DELETE FROM ${sql(t.sessions)} WHERE user_id = ${userId} RETURNING 1`
        : "only" in which
        ? yield* sql`DELETE FROM ${sql(t.sessions)} WHERE id = ${which.only} AND user_id = ${userId} RETURNING 1`
        : yield* sql`DELETE FROM ${sql(t.sessions)} WHERE user_id = ${userId} AND id <> ${which.except} RETURNING 1`
      return gone.length
    }, Effect.orDie)

    const listForUser = traced("SessionsRepo.listForUser")(function*(userId: string, now: Date, limit: number) {
      // host(): the address without the /32 a bare inet would print with a netmask.
      return yield* sql<SessionSummary>`
        SELECT id, created_at, updated_at, refreshed_at, user_agent, host(ip) AS ip, aal::text AS aal, not_after
        FROM ${sql(t.sessions)}
        WHERE user_id = ${userId} AND (not_after IS NULL OR not_after > ${now})
        ORDER BY created_at DESC NULLS LAST, id
        LIMIT ${limit}`
    }, Effect.orDie)

    return {
      insert, signedIn, lockForRefresh, lockSigned, refreshed, stepUp, deleteBelowAal2, downgradeForFactor, addAmr, amr, findForSession,
      deleteForUser, listForUser
    } satisfies SessionsRepoShape
  })
}) {
  /**
   * In memory, over the users of whatever UsersRepo is provided (UsersRepo.Test in rules tests). Locks are no-ops:
   * with Transactions.Test nothing runs concurrently. A deleted session takes its amr claims with it; its refresh
   * tokens go too (RefreshTokensRepo.Test asks this repo whether their session still exists).
   */
  static readonly Test: Layer.Layer<SessionsRepo, never, UsersRepo | IdentitiesRepo> = Layer.effect(
    SessionsRepo,
    Effect.gen(function*() {
      const users = yield* UsersRepo
      const identities = yield* IdentitiesRepo
      interface Row {
        readonly id: string
        readonly userId: string
        readonly notAfter: Date | null
        readonly aal: string
        readonly factorId: string | null
        readonly createdAt: Date
        readonly refreshedAt: Date
        readonly userAgent: string | null
        readonly ip: string | null
        /** Only ever set by `refreshed`: GoTrue never signed tokens for a session made in memory (no key). */
        readonly signedCounter: bigint | null
      }
      const sessions = yield* Ref.make(new Map<string, Row>())
      // session id -> method -> last updated
      const claims = yield* Ref.make(new Map<string, ReadonlyMap<string, Date>>())
      const remove = (keep: (row: Row) => boolean) =>
        Ref.get(sessions).pipe(
          Effect.flatMap((map) => {
            const gone = [...map.values()].filter((row) => !keep(row)).map((row) => row.id)
            return Effect.as(
              Effect.zipRight(
                Ref.set(sessions, new Map([...map].filter(([id]) => !gone.includes(id)))),
                Ref.update(claims, (all) => new Map([...all].filter(([id]) => !gone.includes(id))))
              ),
              gone.length
            )
          })
        )
      return SessionsRepo.make({
        insert: ({ id, ip, notAfter, now, userAgent, userId }) =>
          Ref.update(sessions, (map) =>
            new Map(map).set(id, {
              id,
              userId,
              notAfter: notAfter ?? null,
              aal: "aal1",
              factorId: null,
              createdAt: now,
              refreshedAt: now,
              userAgent: userAgent ?? null,
              ip: ip ?? null,
              signedCounter: null
            })),
        // No factors in memory: MFA is tested over SQL (FactorsRepo has no in-memory twin).
        signedIn: (userId, now) =>
          Effect.all({
            user: Effect.orDie(users.update(userId, { last_sign_in_at: now }, now)),
            identities: identities.forUser(userId),
            factors: Effect.succeed([])
          }),
        lockForRefresh: (id) =>
          Effect.map(Ref.get(sessions), (map) => Option.map(Option.fromNullable(map.get(id)), (row) => ({ id: row.id, not_after: row.notAfter }))),
        lockSigned: (id) =>
          Effect.map(Ref.get(sessions), (map) =>
            Option.map(Option.fromNullable(map.get(id)), (row): SignedSessionRow => ({
              id: row.id,
              user_id: row.userId,
              not_after: row.notAfter,
              refresh_token_hmac_key: null,
              refresh_token_counter: row.signedCounter,
              created_at: row.createdAt,
              refreshed_at: row.refreshedAt,
              oauth_client_id: null,
              scopes: null
            }))),
        refreshed: (id, now, signedCounter) =>
          Effect.zipRight(
            Ref.update(sessions, (map) => {
              const row = map.get(id)
              return row === undefined
                ? map
                : new Map(map).set(id, { ...row, refreshedAt: now, signedCounter: signedCounter === undefined ? row.signedCounter : signedCounter })
            }),
            Effect.map(Ref.get(claims), (all) => amrOf(all, id))
          ),
        stepUp: (sessionId, method, factorId, now) =>
          Effect.zipRight(
            Effect.zipRight(
              Ref.update(sessions, (map) => {
                const row = map.get(sessionId)
                return row === undefined ? map : new Map(map).set(sessionId, { ...row, aal: "aal2", factorId })
              }),
              Ref.update(claims, (all) => new Map(all).set(sessionId, new Map(all.get(sessionId) ?? []).set(method, now)))
            ),
            Effect.map(Ref.get(claims), (all) => amrOf(all, sessionId))
          ),
        deleteBelowAal2: (userId) => remove((row) => row.userId !== userId || row.aal === "aal2"),
        downgradeForFactor: (factorId, method) =>
          Effect.flatMap(Ref.get(sessions), (map) => {
            const lowered = [...map.values()].filter((row) => row.factorId === factorId).map((row) => row.id)
            return Effect.zipRight(
              Ref.set(sessions, new Map([...map].map(([id, row]) => [id, lowered.includes(id) ? { ...row, aal: "aal1", factorId: null } : row]))),
              Ref.update(claims, (all) =>
                new Map([...all].map(([id, methods]) => [id, lowered.includes(id) ? new Map([...methods].filter(([m]) => m !== method)) : methods])))
            )
          }),
        addAmr: (sessionId, method, now) =>
          Ref.update(claims, (all) => new Map(all).set(sessionId, new Map(all.get(sessionId) ?? []).set(method, now))),
        amr: (sessionId) => Effect.map(Ref.get(claims), (all) => amrOf(all, sessionId)),
        findForSession: (userId, sessionId) =>
          Effect.gen(function*() {
            const found = yield* users.findById(userId)
            if (Option.isNone(found)) return Option.none()
            const user = found.value
            const map = yield* Ref.get(sessions)
            const row = sessionId === undefined ? undefined : map.get(sessionId)
            const exists = row !== undefined && row.userId === user.id
            return Option.some({
              user,
              sessionExists: sessionId === undefined || exists,
              session: exists ? { aal: row.aal, factorId: row.factorId } : undefined,
              identities: yield* identities.forUser(user.id),
              factors: []
            })
          }),
        deleteForUser: (userId, which) =>
          remove((row) =>
            row.userId !== userId ||
            (which === "all" ? false : "only" in which ? row.id !== which.only : row.id === which.except)),
        listForUser: (userId, now, limit) =>
          Effect.map(Ref.get(sessions), (map) =>
            [...map.values()]
              .filter((row) => row.userId === userId && (row.notAfter === null || row.notAfter.getTime() > now.getTime()))
              .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
              .slice(0, limit)
              .map((row): SessionSummary => ({
                id: row.id,
                created_at: row.createdAt,
                updated_at: row.refreshedAt,
                refreshed_at: row.refreshedAt,
                user_agent: row.userAgent,
                ip: row.ip,
                aal: row.aal,
                not_after: row.notAfter
              })))
      })
    })
  )
}
