import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Ref } from "effect"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import { SessionsRepo } from "./SessionsRepo.js"

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

const NIL_INSTANCE = "00000000-0000-0000-0000-000000000000"

/** The refresh_tokens table: trees of digests, one tree per session. */
export class RefreshTokensRepo extends Effect.Service<RefreshTokensRepo>()("auth/RefreshTokensRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)

    const nextId = Effect.fn("RefreshTokensRepo.nextId")(function*() {
      const [next] = yield* sql<{ id: string }>`SELECT nextval(pg_get_serial_sequence(${t.refresh_tokens}, 'id'))::text AS id`
      return next!.id
    }, Effect.orDie)

    const insert = Effect.fn("RefreshTokensRepo.insert")(function*(token: RefreshTokenInsert) {
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

    const lockSessionOf = Effect.fn("RefreshTokensRepo.lockSessionOf")(function*(digest: string) {
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

    const lockForExchange = Effect.fn("RefreshTokensRepo.lockForExchange")(function*(digest: string) {
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

    const latestOf = Effect.fn("RefreshTokensRepo.latestOf")(function*(sessionId: string) {
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

    const rotate = Effect.fn("RefreshTokensRepo.rotate")(function*(revokedId: string, child: RefreshTokenInsert) {
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

    const lock = Effect.fn("RefreshTokensRepo.lock")(function*(digest: string) {
      const [row] = yield* sql<RefreshTokenRow>`
        SELECT id::text AS id, token, user_id, revoked, updated_at, session_id
        FROM ${sql(t.refresh_tokens)} WHERE token = ${digest} FOR UPDATE`
      return Option.fromNullable(row)
    }, Effect.orDie)

    const remove = Effect.fn("RefreshTokensRepo.remove")(function*(id: string) {
      yield* sql`DELETE FROM ${sql(t.refresh_tokens)} WHERE id = ${id}`
    }, Effect.orDie)

    const revokeForSession = Effect.fn("RefreshTokensRepo.revokeForSession")(function*(sessionId: string, now: Date) {
      yield* sql`UPDATE ${sql(t.refresh_tokens)} SET revoked = true, updated_at = ${now}
        WHERE session_id = ${sessionId} AND revoked = false`
    }, Effect.orDie)

    const removeForUser = Effect.fn("RefreshTokensRepo.removeForUser")(function*(userId: string) {
      yield* sql`DELETE FROM ${sql(t.refresh_tokens)} WHERE user_id = ${userId}`
    }, Effect.orDie)

    return {
      nextId, insert, lockSessionOf, lock, lockForExchange, latestOf, rotate, remove, revokeForSession, removeForUser
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
