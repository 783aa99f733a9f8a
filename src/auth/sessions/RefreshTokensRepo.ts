import * as SqlClient from "@effect/sql/SqlClient"
import type * as Statement from "@effect/sql/Statement"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import { type FactorJson, type IdentityJson, relationsJson, withRelations } from "../users/UsersRepo.js"
import { type AmrEntry, SessionsRepo, type UserWithRelations } from "./SessionsRepo.js"
import type { UserRow } from "../domain/UserRow.js"
import type { NewAuditLogEntry } from "../users/AuditLogRepo.js"
import { traced } from "../../platform/Traced.js"
import { compiledOnce } from "../../platform/sql/CompiledOnce.js"
import { onPool } from "../../platform/sql/PoolStatements.js"

/** A refresh_tokens row as the exchange reads it: `token` is the digest, `parent` the parent's digest. */
export interface RefreshTokenRow {
  readonly id: string
  readonly token: string
  readonly user_id: string | null
  readonly revoked: boolean | null
  readonly updated_at: Date | null
  readonly session_id: string | null
}

export interface RefreshTokenInsert {
  readonly id: string
  readonly digest: string
  readonly userId: string
  readonly parent: string | null
  readonly sessionId: string
  readonly now: Date
}

export interface RefreshTokensRepoShape {
  /** The id the next token will have; tokens are derived from it, so it is taken before the row is written. */
  readonly nextId: () => Effect.Effect<string>
  readonly insert: (token: RefreshTokenInsert) => Effect.Effect<void>
  /**
   * The session of the token with this digest, locked until the transaction ends (an exchange locks the session
   * before its token); `session` is None when the token names no session or one that is gone.
   */
  readonly lockSessionOf: (digest: string) => Effect.Effect<Option.Option<{ readonly session_id: string | null; readonly session: Option.Option<LockedSession> }>>
  /** The token with this digest, locked until the transaction ends. */
  readonly lock: (digest: string) => Effect.Effect<Option.Option<RefreshTokenRow>>
  /**
   * An exchange's second read, in one statement: the token locked (as `lock`), its session's newest unrevoked token
   * (`current`), and the id a child would take (as `nextId`; unused ids leave harmless gaps).
   */
  readonly lockForExchange: (digest: string) => Effect.Effect<Option.Option<{
    readonly row: RefreshTokenRow
    readonly current: Option.Option<CurrentToken>
    readonly nextId: string
  }>>
  /**
   * The session's newest unrevoked token (as `current` of lockForExchange) and the id a new token would take (as
   * `nextId`), in one statement: what the exchange of a GoTrue signed token, which has no row, reads of the tokens.
   */
  readonly latestOf: (sessionId: string) => Effect.Effect<{
    readonly current: Option.Option<CurrentToken>
    readonly nextId: string
  }>
  /**
   * The refresh grant's first statement, without locks (a snapshot): the token, its session, the session's current
   * token, the id a child would take (as `nextId`), and the token's user with its identities and factors. Only a
   * plain rotation acts on it, through rotateChecked, which re-checks on locked rows; everything else goes the
   * locked way (lockSessionOf, lockForExchange).
   */
  readonly readForExchange: (digest: string) => Effect.Effect<Option.Option<ExchangeSnapshot>>
  /**
   * The refresh grant's second statement, a plain rotation in one atomic statement: locks the session and then the
   * token (the exchange's lock order), re-checks on their latest versions what the snapshot said (session not
   * signed nor exported nor an OAuth client's, not past not_after, user not banned, token unrevoked), and only then
   * revokes the token, inserts its child, stamps the session refreshed and writes the audit entries. None when it
   * wrote nothing (something changed since the snapshot): the caller goes the locked way. Otherwise the session's
   * amr claims, most recent first, read under a share lock after the session's (a claim a factor's removal deleted
   * meanwhile is not read).
   */
  readonly rotateChecked: (rotation: CheckedRotation) => Effect.Effect<Option.Option<ReadonlyArray<AmrEntry>>>
  /** Revokes a token and inserts its child, in one statement. */
  readonly rotate: (revokedId: string, child: RefreshTokenInsert) => Effect.Effect<void>
  readonly remove: (id: string) => Effect.Effect<void>
  /** Revokes every live token of a session (a step-up re-roots the session's tokens). */
  readonly revokeForSession: (sessionId: string, now: Date) => Effect.Effect<void>
  /**
   * Deletes every token of a user. user_id is a varchar with no foreign key, so deleting the user does not take
   * tokens without a session along; this does.
   */
  readonly removeForUser: (userId: string) => Effect.Effect<void>
}

/** A session's newest unrevoked token: `token` its digest (or a GoTrue legacy token), `parent` its parent's. */
export interface CurrentToken {
  readonly id: string
  readonly token: string
  readonly parent: string | null
}

export interface LockedSession {
  readonly id: string
  readonly not_after: Date | null
  /** GoTrue's key for signed tokens on the session row, if any (GoTrue's own, or written by export-sessions). */
  readonly signed_key?: string | null
  /**
   * The session was refreshed, with a signed-token counter beyond this token's row, after the row was made: GoTrue
   * went on with the session (a switch back to GoTrue and back again), and this row's token is behind GoTrue's.
   */
  readonly moved_on?: boolean
  /** The OAuth client the session was started for (GoTrue's OAuth server; null for every other session). */
  readonly oauth_client_id: string | null
  /** The scopes that client was granted, space-separated. */
  readonly scopes: string | null
}

/** What readForExchange reads: the token's row and what the exchange decides on, as of one snapshot. */
export interface ExchangeSnapshot {
  readonly row: RefreshTokenRow
  /** The token's session; undefined when the token names none or one that is gone. */
  readonly session: {
    readonly id: string
    readonly user_id: string
    readonly not_after: Date | null
    readonly signed_key: string | null
    /** refresh_token_counter is set: GoTrue signed tokens for the session. */
    readonly counted: boolean
    readonly moved_on: boolean
    readonly oauth_client_id: string | null
  } | undefined
  readonly current: Option.Option<CurrentToken>
  readonly nextId: string
  /** The token's user, when user_id names one. */
  readonly user: Option.Option<UserWithRelations>
}

export interface CheckedRotation {
  readonly sessionId: string
  /** The presented token's row id. */
  readonly tokenId: string
  readonly child: RefreshTokenInsert
  /** Written only when the rotation is. */
  readonly audit: ReadonlyArray<NewAuditLogEntry>
}

const NIL_INSTANCE = "00000000-0000-0000-0000-000000000000"

/** What the checked rotation's statement answers: whether it rotated, and the session's amr claims. */
interface CheckedRow {
  readonly rotated: number
  readonly amr: ReadonlyArray<readonly [string, number]>
}

/** What readForExchange's statement reads: the user's columns as they are, everything else under gh_ names. */
type ExchangeRow = UserRow & {
  readonly identities_json: ReadonlyArray<IdentityJson>
  readonly factors_json: ReadonlyArray<FactorJson>
  readonly gh_id: string
  readonly gh_token: string
  readonly gh_user_id: string | null
  readonly gh_revoked: boolean | null
  readonly gh_updated_at: Date | null
  readonly gh_session_id: string | null
  readonly gh_s_id: string | null
  readonly gh_s_user_id: string | null
  readonly gh_s_not_after: Date | null
  readonly gh_s_signed_key: string | null
  readonly gh_s_counted: boolean | null
  readonly gh_s_client: string | null
  readonly gh_moved_on: boolean | null
  readonly gh_c_id: string | null
  readonly gh_c_token: string | null
  readonly gh_c_parent: string | null
  readonly gh_next_id: string
  readonly gh_u_found: boolean
}

/** The refresh_tokens table: trees of digests, one tree per session. */
export class RefreshTokensRepo extends Effect.Service<RefreshTokensRepo>()("auth/RefreshTokensRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)

    const nextId = traced("RefreshTokensRepo.nextId")(function*() {
      const [next] = yield* sql<{ id: string }>`SELECT nextval(pg_get_serial_sequence(${t.refresh_tokens}, 'id'))::text AS id`
      return next!.id
    }, Effect.orDie)

    const insert = traced("RefreshTokensRepo.insert")(function*(token: RefreshTokenInsert) {
      yield* sql`INSERT INTO ${sql(t.refresh_tokens)} ${sql.insert({
        // GoTrue reads instance_id into a non-null UUID: NULL here would fail its every read of the row.
        instance_id: NIL_INSTANCE,
        id: token.id,
        token: token.digest,
        user_id: token.userId,
        revoked: false,
        created_at: token.now,
        updated_at: token.now,
        parent: token.parent,
        session_id: token.sessionId
      })}`
    }, Effect.orDie)

    const lockSessionOf = traced("RefreshTokensRepo.lockSessionOf")(function*(digest: string) {
      // refreshed_at is GoTrue's `timestamp without time zone`, holding UTC: compared as UTC, in SQL.
      const [located] = yield* sql<{
        session_id: string | null
        id: string | null
        not_after: Date | null
        signed_key: string | null
        moved_on: boolean | null
        oauth_client_id: string | null
        scopes: string | null
      }>`
        SELECT r.session_id, s.id, s.not_after, s.refresh_token_hmac_key AS signed_key, s.oauth_client_id, s.scopes,
          (s.refresh_token_counter > r.id AND r.created_at < s.refreshed_at AT TIME ZONE 'UTC') AS moved_on
        FROM ${sql(t.refresh_tokens)} r
        LEFT JOIN LATERAL (
          SELECT id, not_after, refresh_token_hmac_key, refresh_token_counter, refreshed_at, oauth_client_id, scopes FROM ${sql(t.sessions)}
          WHERE id = r.session_id FOR UPDATE
        ) s ON true
        WHERE r.token = ${digest}`
      return Option.map(Option.fromNullable(located), ({ id, moved_on, not_after, oauth_client_id, scopes, session_id, signed_key }) => ({
        session_id,
        session: id === null
          ? Option.none<LockedSession>()
          : Option.some({ id, not_after, signed_key, moved_on: moved_on === true, oauth_client_id, scopes })
      }))
    }, Effect.orDie)

    const lockForExchange = traced("RefreshTokensRepo.lockForExchange")(function*(digest: string) {
      const [row] = yield* sql<RefreshTokenRow & {
        current_id: string | null
        current_token: string | null
        current_parent: string | null
        next_id: string
      }>`
        SELECT r.id::text AS id, r.token, r.user_id, r.revoked, r.updated_at, r.session_id,
          c.id::text AS current_id, c.token AS current_token, c.parent AS current_parent,
          nextval(pg_get_serial_sequence(${t.refresh_tokens}, 'id'))::text AS next_id
        FROM ${sql(t.refresh_tokens)} r
        LEFT JOIN LATERAL (SELECT id, token, parent FROM ${sql(t.refresh_tokens)}
          WHERE session_id = r.session_id AND revoked = false ORDER BY id DESC LIMIT 1) c ON true
        WHERE r.token = ${digest} FOR UPDATE OF r`
      return Option.map(Option.fromNullable(row), ({ current_id, current_parent, current_token, next_id, ...token }) => ({
        row: token,
        current: current_id === null ? Option.none() : Option.some({ id: current_id, token: current_token!, parent: current_parent }),
        nextId: next_id
      }))
    }, Effect.orDie)

    const latestOf = traced("RefreshTokensRepo.latestOf")(function*(sessionId: string) {
      const [row] = yield* sql<{ current_id: string | null; current_token: string | null; current_parent: string | null; next_id: string }>`
        SELECT c.id::text AS current_id, c.token AS current_token, c.parent AS current_parent,
          nextval(pg_get_serial_sequence(${t.refresh_tokens}, 'id'))::text AS next_id
        FROM (SELECT 1) AS one
        LEFT JOIN LATERAL (SELECT id, token, parent FROM ${sql(t.refresh_tokens)}
          WHERE session_id = ${sessionId} AND revoked = false ORDER BY id DESC LIMIT 1) c ON true`
      const { current_id, current_parent, current_token, next_id } = row!
      return {
        current: current_id === null ? Option.none() : Option.some({ id: current_id, token: current_token!, parent: current_parent }),
        nextId: next_id
      }
    }, Effect.orDie)

    const rotate = traced("RefreshTokensRepo.rotate")(function*(revokedId: string, child: RefreshTokenInsert) {
      yield* sql`
        WITH revoked AS (
          UPDATE ${sql(t.refresh_tokens)} SET revoked = true, updated_at = ${child.now} WHERE id = ${revokedId}
        )
        INSERT INTO ${sql(t.refresh_tokens)} ${sql.insert({
        instance_id: NIL_INSTANCE,
        id: child.id,
        token: child.digest,
        user_id: child.userId,
        revoked: false,
        created_at: child.now,
        updated_at: child.now,
        parent: child.parent,
        session_id: child.sessionId
      })}`
    }, Effect.orDie)

    // A user id as the users table's key, or NULL: user_id is a varchar, and a value that is no UUID must not fail
    // the statement (the locked way then judges the token, as it always has).
    const UUID = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"

    // Compiled once (CompiledOnce.ts): the hot path's first statement. The user's columns come as they are (u.*, so
    // they parse as every other read of a user); everything else under gh_ names no users column has.
    const readForExchangeStatement = compiledOnce(sql, (values: { readonly digest: string }) => sql<ExchangeRow>`
        SELECT u.*, ${relationsJson(sql, t, "u")},
          r.id::text AS gh_id, r.token AS gh_token, r.user_id AS gh_user_id, r.revoked AS gh_revoked,
          r.updated_at AS gh_updated_at, r.session_id AS gh_session_id,
          s.id AS gh_s_id, s.user_id AS gh_s_user_id, s.not_after AS gh_s_not_after,
          s.refresh_token_hmac_key AS gh_s_signed_key, s.refresh_token_counter IS NOT NULL AS gh_s_counted,
          s.oauth_client_id AS gh_s_client,
          (s.refresh_token_counter > r.id AND r.created_at < s.refreshed_at AT TIME ZONE 'UTC') AS gh_moved_on,
          c.id::text AS gh_c_id, c.token AS gh_c_token, c.parent AS gh_c_parent,
          nextval(pg_get_serial_sequence(${t.refresh_tokens}, 'id'))::text AS gh_next_id,
          u.id IS NOT NULL AS gh_u_found
        FROM ${sql(t.refresh_tokens)} r
        LEFT JOIN ${sql(t.sessions)} s ON s.id = r.session_id
        LEFT JOIN LATERAL (SELECT id, token, parent FROM ${sql(t.refresh_tokens)}
          WHERE session_id = r.session_id AND revoked = false ORDER BY id DESC LIMIT 1) c ON true
        LEFT JOIN ${sql(t.users)} u ON u.id = CASE WHEN r.user_id ~ ${UUID} THEN r.user_id::uuid END
        WHERE r.token = ${values.digest}`)

    const readForExchange = traced("RefreshTokensRepo.readForExchange")(function*(digest: string) {
      const [found] = yield* onPool(sql, readForExchangeStatement({ digest }))
      if (found === undefined) return Option.none<ExchangeSnapshot>()
      const {
        gh_c_id, gh_c_parent, gh_c_token, gh_id, gh_moved_on, gh_next_id, gh_revoked, gh_s_client, gh_s_counted, gh_s_id,
        gh_s_not_after, gh_s_signed_key, gh_s_user_id, gh_session_id, gh_token, gh_u_found, gh_updated_at, gh_user_id,
        ...user
      } = found
      return Option.some<ExchangeSnapshot>({
        row: { id: gh_id, token: gh_token, user_id: gh_user_id, revoked: gh_revoked, updated_at: gh_updated_at, session_id: gh_session_id },
        session: gh_s_id === null ? undefined : {
          id: gh_s_id,
          user_id: gh_s_user_id!,
          not_after: gh_s_not_after,
          signed_key: gh_s_signed_key,
          counted: gh_s_counted === true,
          moved_on: gh_moved_on === true,
          oauth_client_id: gh_s_client
        },
        current: gh_c_id === null ? Option.none() : Option.some({ id: gh_c_id, token: gh_c_token!, parent: gh_c_parent }),
        nextId: gh_next_id,
        user: gh_u_found ? Option.some(withRelations(user)) : Option.none()
      })
    }, Effect.orDie)

    // The checked rotation's statement, compiled once for each number of audit entries (CompiledOnce.ts; the
    // refresh grant always writes two). Entry i's fields are the parameters a<i>id, a<i>payload (its JSON text),
    // a<i>at and a<i>ip.
    const rotateCheckedStatements = new Map<number, (values: Record<string, unknown>) => Statement.Statement<CheckedRow>>()
    const rotateCheckedStatement = (entryCount: number) => {
      let statement = rotateCheckedStatements.get(entryCount)
      if (statement === undefined) {
        statement = compiledOnce(sql, (v: Record<string, unknown>) => {
          const entries = Array.from({ length: entryCount }, (_, i) =>
            sql`(${v[`a${i}id`]}::uuid, ${v[`a${i}payload`]}::json, ${v[`a${i}at`]}::timestamptz, ${v[`a${i}ip`]}::varchar)`)
          return sql<CheckedRow>`
        WITH s AS MATERIALIZED (
          SELECT s.id FROM ${sql(t.sessions)} s JOIN ${sql(t.users)} u ON u.id = s.user_id
          WHERE s.id = ${v.sessionId} AND s.refresh_token_hmac_key IS NULL AND s.refresh_token_counter IS NULL
            AND s.oauth_client_id IS NULL AND (s.not_after IS NULL OR s.not_after > ${v.now})
            AND (u.banned_until IS NULL OR u.banned_until <= ${v.now})
          FOR UPDATE OF s
        ), r AS MATERIALIZED (
          SELECT k.id FROM s JOIN LATERAL (
            SELECT id FROM ${sql(t.refresh_tokens)} WHERE id = ${v.tokenId} AND session_id = s.id AND revoked = false FOR UPDATE
          ) k ON true
        ), revoked AS (
          UPDATE ${sql(t.refresh_tokens)} SET revoked = true, updated_at = ${v.now} WHERE id = (SELECT id FROM r) RETURNING token
        ), child AS (
          INSERT INTO ${sql(t.refresh_tokens)} (instance_id, id, token, user_id, revoked, created_at, updated_at, parent, session_id)
          SELECT ${NIL_INSTANCE}, ${v.childId}, ${v.childDigest}, ${v.childUserId}, false, ${v.now}, ${v.now}, revoked.token, ${v.sessionId}
          FROM revoked
        ), touched AS (
          UPDATE ${sql(t.sessions)} SET refreshed_at = ${v.now}, updated_at = ${v.now}
          WHERE id = ${v.sessionId} AND EXISTS (SELECT 1 FROM revoked)
        ), audited AS (
          INSERT INTO ${sql(t.audit_log_entries)} (instance_id, id, payload, created_at, ip_address)
          SELECT ${NIL_INSTANCE}, v.id, v.payload, v.created_at, v.ip_address
          FROM revoked, (VALUES ${sql.csv(entries)}) AS v (id, payload, created_at, ip_address)
        ), claims AS (
          SELECT c.authentication_method, c.updated_at FROM s JOIN LATERAL (
            SELECT authentication_method, updated_at FROM ${sql(t.mfa_amr_claims)} WHERE session_id = s.id FOR SHARE
          ) c ON true
        )
        SELECT (SELECT count(*) FROM revoked)::int AS rotated,
          COALESCE((SELECT json_agg(json_build_array(authentication_method, floor(extract(epoch FROM updated_at))::bigint)
            ORDER BY updated_at DESC, authentication_method) FROM claims), '[]'::json) AS amr`
        })
        rotateCheckedStatements.set(entryCount, statement)
      }
      return statement
    }

    const rotateChecked = traced("RefreshTokensRepo.rotateChecked")(function*({ audit, child, sessionId, tokenId }: CheckedRotation) {
      const values: Record<string, unknown> = {
        sessionId,
        tokenId,
        now: child.now,
        childId: child.id,
        childDigest: child.digest,
        childUserId: child.userId
      }
      audit.forEach((entry, i) => {
        values[`a${i}id`] = entry.id
        values[`a${i}payload`] = JSON.stringify(entry.payload)
        values[`a${i}at`] = entry.createdAt
        values[`a${i}ip`] = entry.ipAddress
      })
      const [result] = yield* onPool(sql, rotateCheckedStatement(audit.length)(values))
      return result!.rotated === 0
        ? Option.none()
        : Option.some(result!.amr.map(([method, timestamp]): AmrEntry => ({ method, timestamp: Number(timestamp) })))
    }, Effect.orDie)

    const lock = traced("RefreshTokensRepo.lock")(function*(digest: string) {
      const [row] = yield* sql<RefreshTokenRow>`
        SELECT id::text AS id, token, user_id, revoked, updated_at, session_id
        FROM ${sql(t.refresh_tokens)} WHERE token = ${digest} FOR UPDATE`
      return Option.fromNullable(row)
    }, Effect.orDie)

    const remove = traced("RefreshTokensRepo.remove")(function*(id: string) {
      yield* sql`DELETE FROM ${sql(t.refresh_tokens)} WHERE id = ${id}`
    }, Effect.orDie)

    const revokeForSession = traced("RefreshTokensRepo.revokeForSession")(function*(sessionId: string, now: Date) {
      yield* sql`UPDATE ${sql(t.refresh_tokens)} SET revoked = true, updated_at = ${now}
        WHERE session_id = ${sessionId} AND revoked = false`
    }, Effect.orDie)

    const removeForUser = traced("RefreshTokensRepo.removeForUser")(function*(userId: string) {
      yield* sql`DELETE FROM ${sql(t.refresh_tokens)} WHERE user_id = ${userId}`
    }, Effect.orDie)

    return {
      nextId, insert, lockSessionOf, lock, lockForExchange, readForExchange, rotateChecked, latestOf, rotate, remove, revokeForSession,
      removeForUser
    } satisfies RefreshTokensRepoShape
  })
}) {
  /**
   * In memory. A token whose session no longer exists is gone, as ON DELETE CASCADE makes it: every read asks the
   * provided SessionsRepo (SessionsRepo.Test in rules tests).
   */
  static readonly Test: Layer.Layer<RefreshTokensRepo, never, SessionsRepo> = Layer.effect(
    RefreshTokensRepo,
    Effect.gen(function*() {
      const sessions = yield* SessionsRepo
      const counter = yield* Ref.make(0)
      const rows = yield* Ref.make<ReadonlyArray<RefreshTokenRow & { readonly parent: string | null }>>([])
      const live = Effect.flatMap(Ref.get(rows), (all) =>
        Effect.filter(all, (row) =>
          row.session_id === null ? Effect.succeed(true) : Effect.map(sessions.lockForRefresh(row.session_id), Option.isSome)))
      const find = (digest: string) => Effect.map(live, (all) => Option.fromNullable(all.find((row) => row.token === digest)))
      const set = (ids: ReadonlyArray<string>, now: Date) =>
        Ref.update(rows, (all) => all.map((row) => (ids.includes(row.id) ? { ...row, revoked: true, updated_at: now } : row)))

      const nextId = () => Effect.map(Ref.updateAndGet(counter, (n) => n + 1), String)
      const insert = (token: RefreshTokenInsert) =>
        Ref.update(rows, (all) => [...all, {
          id: token.id,
          token: token.digest,
          user_id: token.userId,
          revoked: false,
          updated_at: token.now,
          session_id: token.sessionId,
          parent: token.parent
        }])
      const current = (sessionId: string | null) =>
        Effect.map(sessionId === null ? Effect.succeed([]) : live, (all) =>
          Option.fromNullable(
            all.filter((row) => row.session_id === sessionId && row.revoked === false)
              .sort((a, b) => Number(b.id) - Number(a.id))[0]
          ).pipe(Option.map((row) => ({ id: row.id, token: row.token, parent: row.parent }))))
      const lock = (digest: string) => Effect.map(find(digest), Option.map(({ parent: _parent, ...row }) => row))

      return RefreshTokensRepo.make({
        nextId,
        insert,
        lockSessionOf: (digest) =>
          Effect.flatMap(find(digest), Option.match({
            onNone: () => Effect.succeed(Option.none()),
            onSome: (row) =>
              Effect.map(
                row.session_id === null ? Effect.succeed(Option.none()) : sessions.lockForRefresh(row.session_id),
                // A session made in memory never holds a key for signed tokens (only GoTrue or export-sessions write one),
                // nor an OAuth client (the OAuth server runs on the database only).
                (session) =>
                  Option.some({
                    session_id: row.session_id,
                    session: Option.map(session, (found) => ({ ...found, signed_key: null, moved_on: false, oauth_client_id: null, scopes: null }))
                  })
              )
          })),
        lock,
        // No snapshot in memory: every exchange goes the locked way, the one the rules tests are about.
        readForExchange: () => Effect.succeed(Option.none()),
        rotateChecked: () => Effect.succeed(Option.none()),
        lockForExchange: (digest) =>
          Effect.flatMap(lock(digest), Option.match({
            onNone: () => Effect.succeed(Option.none()),
            onSome: (row) => Effect.map(Effect.all({ current: current(row.session_id), nextId: nextId() }), (rest) => Option.some({ row, ...rest }))
          })),
        latestOf: (sessionId) => Effect.all({ current: current(sessionId), nextId: nextId() }),
        rotate: (revokedId, child) => Effect.zipRight(set([revokedId], child.now), insert(child)),
        remove: (id) => Ref.update(rows, (all) => all.filter((row) => row.id !== id)),
        revokeForSession: (sessionId, now) =>
          Effect.flatMap(Ref.get(rows), (all) =>
            set(all.filter((row) => row.session_id === sessionId && row.revoked === false).map((row) => row.id), now)),
        removeForUser: (userId) => Ref.update(rows, (all) => all.filter((row) => row.user_id !== userId))
      })
    })
  )
}
