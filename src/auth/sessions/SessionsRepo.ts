import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Ref } from "effect"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import type { IdentityRow, UserRow } from "../domain/UserRow.js"
import { IdentitiesRepo } from "../users/IdentitiesRepo.js"
import { UsersRepo } from "../users/UsersRepo.js"

export interface AmrEntry {
  readonly method: string
  readonly timestamp: number
}

export interface SessionsRepoShape {
  readonly insert: (session: { readonly id: string; readonly userId: string; readonly now: Date }) => Effect.Effect<void>
  /** Stamps the user's last sign-in and returns the user as it now is, with its identities. */
  readonly signedIn: (userId: string, now: Date) => Effect.Effect<{ readonly user: UserRow; readonly identities: ReadonlyArray<IdentityRow> }>
  /**
   * The session row, locked until the transaction ends. The exchange locks it through its token instead
   * (RefreshTokensRepo.lockSessionOf); RefreshTokensRepo.Test asks this whether a token's session still exists.
   */
  readonly lockForRefresh: (id: string) => Effect.Effect<Option.Option<{ readonly id: string; readonly not_after: Date | null }>>
  /**
   * A rotation's session writes in one statement: stamps the session refreshed, records (or renews) its
   * token_refresh amr claim, and returns the session's amr claims as they now are, most recent first.
   */
  readonly refreshed: (id: string, now: Date) => Effect.Effect<ReadonlyArray<AmrEntry>>
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
  /** Deletes sessions of a user: all, only one, or all but one. Their refresh tokens and amr claims go with them. */
  readonly deleteForUser: (userId: string, which: { readonly only: string } | { readonly except: string } | "all") => Effect.Effect<void>
}

export interface SignedInUser {
  readonly user: UserRow
  readonly sessionExists: boolean
  readonly identities: ReadonlyArray<IdentityRow>
}

/** An identity as json_agg renders a row: timestamps as text. */
type IdentityJson = Omit<IdentityRow, "last_sign_in_at" | "created_at" | "updated_at"> & {
  readonly last_sign_in_at: string | null
  readonly created_at: string | null
  readonly updated_at: string | null
}

const dateOrNull = (text: string | null): Date | null => (text === null ? null : new Date(text))

const identityFromJson = (row: IdentityJson): IdentityRow => ({
  ...row,
  last_sign_in_at: dateOrNull(row.last_sign_in_at),
  created_at: dateOrNull(row.created_at),
  updated_at: dateOrNull(row.updated_at)
})

const REFRESH_METHOD = "token_refresh"

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

    const insert = Effect.fn("SessionsRepo.insert")(function*(session: { readonly id: string; readonly userId: string; readonly now: Date }) {
      yield* sql`INSERT INTO ${sql(t.sessions)} ${sql.insert({
        id: session.id,
        user_id: session.userId,
        created_at: session.now,
        updated_at: session.now,
        aal: "aal1",
        refreshed_at: session.now
      })}`
    }, Effect.orDie)

    // A user's identities as one JSON array, oldest first: read with the user, they cost no round trip of their own.
    const identitiesOf = (user: string) =>
      sql`COALESCE((SELECT json_agg(json_build_object('id', i.id, 'provider_id', i.provider_id, 'user_id', i.user_id,
          'identity_data', i.identity_data, 'provider', i.provider, 'last_sign_in_at', i.last_sign_in_at,
          'created_at', i.created_at, 'updated_at', i.updated_at, 'email', i.email) ORDER BY i.created_at, i.id)
        FROM ${sql(t.identities)} i WHERE i.user_id = ${sql(user)}.id), '[]'::json) AS identities_json`

    const signedIn = Effect.fn("SessionsRepo.signedIn")(function*(userId: string, now: Date) {
      const [row] = yield* sql<UserRow & { readonly identities_json: ReadonlyArray<IdentityJson> }>`
        UPDATE ${sql(t.users)} u SET last_sign_in_at = ${now}, updated_at = ${now} WHERE id = ${userId}
        RETURNING u.*, ${identitiesOf("u")}`
      const { identities_json, ...user } = row!
      return { user: user as UserRow, identities: identities_json.map(identityFromJson) as ReadonlyArray<IdentityRow> }
    }, Effect.orDie)

    const lockForRefresh = Effect.fn("SessionsRepo.lockForRefresh")(function*(id: string) {
      const [session] = yield* sql<{ id: string; not_after: Date | null }>`
        SELECT id, not_after FROM ${sql(t.sessions)} WHERE id = ${id} FOR UPDATE`
      return Option.fromNullable(session)
    }, Effect.orDie)

    // The claims a statement returns cannot see its own upsert, so the renewed claim is added to the others.
    const refreshed = Effect.fn("SessionsRepo.refreshed")(function*(id: string, now: Date) {
      const rows = yield* sql<{ authentication_method: string; updated_at: Date }>`
        WITH touched AS (
          UPDATE ${sql(t.sessions)} SET refreshed_at = ${now}, updated_at = ${now} WHERE id = ${id}
        ), claimed AS (
          INSERT INTO ${sql(t.mfa_amr_claims)} (session_id, created_at, updated_at, authentication_method, id)
          VALUES (${id}, ${now}, ${now}, ${REFRESH_METHOD}, gen_random_uuid())
          ON CONFLICT (session_id, authentication_method) DO UPDATE SET updated_at = EXCLUDED.updated_at
        )
        SELECT authentication_method, updated_at FROM ${sql(t.mfa_amr_claims)}
          WHERE session_id = ${id} AND authentication_method <> ${REFRESH_METHOD}
        UNION ALL SELECT ${REFRESH_METHOD}, ${now}::timestamptz
        ORDER BY 2 DESC, 1`
      return rows.map((r): AmrEntry => ({ method: r.authentication_method, timestamp: Math.floor(r.updated_at.getTime() / 1000) }))
    }, Effect.orDie)

    const addAmr = Effect.fn("SessionsRepo.addAmr")(function*(sessionId: string, method: string, now: Date) {
      yield* sql`INSERT INTO ${sql(t.mfa_amr_claims)} (session_id, created_at, updated_at, authentication_method, id)
      VALUES (${sessionId}, ${now}, ${now}, ${method}, gen_random_uuid())
      ON CONFLICT (session_id, authentication_method) DO UPDATE SET updated_at = EXCLUDED.updated_at`
    }, Effect.orDie)

    const amr = Effect.fn("SessionsRepo.amr")(function*(sessionId: string) {
      const rows = yield* sql<{ authentication_method: string; updated_at: Date }>`
        SELECT authentication_method, updated_at FROM ${sql(t.mfa_amr_claims)}
        WHERE session_id = ${sessionId} ORDER BY updated_at DESC, authentication_method`
      return rows.map((r): AmrEntry => ({ method: r.authentication_method, timestamp: Math.floor(r.updated_at.getTime() / 1000) }))
    }, Effect.orDie)

    // One round trip per authenticated request: the identities ride along as a JSON array, so GET /user needs
    // no second query.
    const findForSession = Effect.fn("SessionsRepo.findForSession")(function*(userId: string, sessionId: string | undefined) {
      const rows = yield* sql<UserRow & { readonly session_exists: boolean; readonly identities_json: ReadonlyArray<IdentityJson> }>`
        SELECT u.*, ${sessionId === undefined
          ? sql`true`
          : sql`EXISTS (SELECT 1 FROM ${sql(t.sessions)} s WHERE s.id = ${sessionId} AND s.user_id = u.id)`} AS session_exists,
          ${identitiesOf("u")}
        FROM ${sql(t.users)} u WHERE u.id = ${userId}`
      return Option.map(Option.fromNullable(rows[0]), ({ identities_json, session_exists, ...user }): SignedInUser => ({
        user,
        sessionExists: session_exists,
        identities: identities_json.map(identityFromJson)
      }))
    }, Effect.orDie)

    const deleteForUser = Effect.fn("SessionsRepo.deleteForUser")(function*(
      userId: string,
      which: { readonly only: string } | { readonly except: string } | "all"
    ) {
      if (which === "all") {
        yield* sql`DELETE FROM ${sql(t.sessions)} WHERE user_id = ${userId}`
      } else if ("only" in which) {
        yield* sql`DELETE FROM ${sql(t.sessions)} WHERE id = ${which.only} AND user_id = ${userId}`
      } else {
        yield* sql`DELETE FROM ${sql(t.sessions)} WHERE user_id = ${userId} AND id <> ${which.except}`
      }
    }, Effect.orDie)

    return {
      insert, signedIn, lockForRefresh, refreshed, addAmr, amr, findForSession, deleteForUser
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
      interface Row { readonly id: string; readonly userId: string; readonly notAfter: Date | null }
      const sessions = yield* Ref.make(new Map<string, Row>())
      // session id -> method -> last updated
      const claims = yield* Ref.make(new Map<string, ReadonlyMap<string, Date>>())
      const remove = (keep: (row: Row) => boolean) =>
        Ref.get(sessions).pipe(
          Effect.flatMap((map) => {
            const gone = [...map.values()].filter((row) => !keep(row)).map((row) => row.id)
            return Effect.zipRight(
              Ref.set(sessions, new Map([...map].filter(([id]) => !gone.includes(id)))),
              Ref.update(claims, (all) => new Map([...all].filter(([id]) => !gone.includes(id))))
            )
          })
        )
      return SessionsRepo.make({
        insert: ({ id, now: _now, userId }) => Ref.update(sessions, (map) => new Map(map).set(id, { id, userId, notAfter: null })),
        signedIn: (userId, now) =>
          Effect.all({ user: Effect.orDie(users.update(userId, { last_sign_in_at: now }, now)), identities: identities.forUser(userId) }),
        lockForRefresh: (id) =>
          Effect.map(Ref.get(sessions), (map) => Option.map(Option.fromNullable(map.get(id)), (row) => ({ id: row.id, not_after: row.notAfter }))),
        refreshed: (id, now) =>
          Effect.zipRight(
            Ref.update(claims, (all) => new Map(all).set(id, new Map(all.get(id) ?? []).set(REFRESH_METHOD, now))),
            Effect.map(Ref.get(claims), (all) => amrOf(all, id))
          ),
        addAmr: (sessionId, method, now) =>
          Ref.update(claims, (all) => new Map(all).set(sessionId, new Map(all.get(sessionId) ?? []).set(method, now))),
        amr: (sessionId) => Effect.map(Ref.get(claims), (all) => amrOf(all, sessionId)),
        findForSession: (userId, sessionId) =>
          Effect.gen(function*() {
            const found = yield* users.findById(userId)
            if (Option.isNone(found)) return Option.none()
            const user = found.value
            const map = yield* Ref.get(sessions)
            return Option.some({
              user,
              sessionExists: sessionId === undefined || map.get(sessionId)?.userId === user.id,
              identities: yield* identities.forUser(user.id)
            })
          }),
        deleteForUser: (userId, which) =>
          remove((row) =>
            row.userId !== userId ||
            (which === "all" ? false : "only" in which ? row.id !== which.only : row.id === which.except))
      })
    })
  )
}
