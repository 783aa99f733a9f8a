import type * as Statement from "@effect/sql/Statement"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { isUniqueViolation } from "../../platform/sql/SqlErrors.js"
import { type AuthTables, authTables } from "../AuthTables.js"
import type { FactorRow } from "../domain/FactorRow.js"
import { type PageSlice, pageSlice } from "../domain/PageSlice.js"
import type { IdentityRow, UserRow } from "../domain/UserRow.js"
import { traced } from "../../platform/Traced.js"

/** Another user already holds this email or phone (SQLSTATE 23505 in Live): two writers raced for one address. */
export class UniqueViolation extends Data.TaggedError("UniqueViolation")<{}> {}

/** A users row to insert; every column not named here takes its default. */
export interface UserInsert {
  readonly id: string
  readonly aud: string
  readonly role: string
  readonly email: string | null
  readonly phone: string | null
  readonly encrypted_password: string
  readonly email_confirmed_at: Date | null
  readonly phone_confirmed_at: Date | null
  readonly raw_app_meta_data: Record<string, unknown>
  readonly raw_user_meta_data: Record<string, unknown>
  readonly is_anonymous: boolean
  /** An SSO account (GoTrue's is_sso_user): its email may repeat another account's. */
  readonly is_sso_user?: boolean
  readonly now: Date
}

/** Column values a service may change on a user; every other column stays as it is. */
export type UserPatch = Partial<{
  readonly encrypted_password: string | null
  readonly email_confirmed_at: Date | null
  readonly phone_confirmed_at: Date | null
  readonly confirmation_token: string | null
  readonly confirmation_sent_at: Date | null
  readonly invited_at: Date | null
  readonly email_change: string | null
  readonly email_change_token_new: string | null
  readonly email_change_token_current: string | null
  readonly email_change_confirm_status: number
  readonly email_change_sent_at: Date | null
  readonly phone_change: string | null
  readonly phone_change_token: string | null
  readonly phone_change_sent_at: Date | null
  readonly reauthentication_token: string | null
  readonly reauthentication_sent_at: Date | null
  readonly recovery_token: string | null
  readonly recovery_sent_at: Date | null
  readonly raw_user_meta_data: Record<string, unknown>
  readonly raw_app_meta_data: Record<string, unknown>
  readonly email: string | null
  readonly phone: string | null
  readonly is_anonymous: boolean
  readonly last_sign_in_at: Date | null
  readonly role: string | null
  readonly banned_until: Date | null
  readonly deleted_at: Date | null
}>

/** One page of an audience's users, newest first, and how many users match in all. */
export interface UserListQuery {
  readonly aud: string
  /** A substring of the email, phone or user_metadata.full_name, in any case; "" matches everyone. */
  readonly filter: string
  readonly page: number
  readonly perPage: number
}

/** A listed user with its identities and factors, oldest first (what the admin list answers with). */
export type ListedUser = UserRow & {
  readonly identities: ReadonlyArray<IdentityRow>
  readonly factors: ReadonlyArray<FactorRow>
}

export interface UserList {
  readonly users: ReadonlyArray<ListedUser>
  readonly total: number
}

/** A factor as json_agg renders a row: timestamps as text. */
export type FactorJson = Omit<FactorRow, "created_at" | "updated_at" | "last_challenged_at"> & {
  readonly created_at: string
  readonly updated_at: string
  readonly last_challenged_at: string | null
}

/** An identity as json_agg renders a row: timestamps as text. */
export type IdentityJson = Omit<IdentityRow, "last_sign_in_at" | "created_at" | "updated_at"> & {
  readonly last_sign_in_at: string | null
  readonly created_at: string | null
  readonly updated_at: string | null
}

const dateOrNull = (text: string | null): Date | null => (text === null ? null : new Date(text))

export const factorFromJson = (row: FactorJson): FactorRow => ({
  ...row,
  created_at: new Date(row.created_at),
  updated_at: new Date(row.updated_at),
  last_challenged_at: dateOrNull(row.last_challenged_at)
})

export const identityFromJson = (row: IdentityJson): IdentityRow => ({
  ...row,
  last_sign_in_at: dateOrNull(row.last_sign_in_at),
  created_at: dateOrNull(row.created_at),
  updated_at: dateOrNull(row.updated_at)
})

/**
 * A user's identities and factors (without secrets) as two JSON arrays, oldest first, as columns `identities_json`
 * and `factors_json` of a statement that reads the user as `user`: read with the user, they cost no round trip of
 * their own. json_agg renders timestamps to the microsecond, and new Date keeps the millisecond as the driver's
 * parser does, so the rows equal those read by their own statements.
 */
export const relationsJson = (sql: Statement.Constructor, t: AuthTables, user: string): Statement.Fragment =>
  sql`COALESCE((SELECT json_agg(json_build_object('id', i.id, 'provider_id', i.provider_id, 'user_id', i.user_id,
      'identity_data', i.identity_data, 'provider', i.provider, 'last_sign_in_at', i.last_sign_in_at,
      'created_at', i.created_at, 'updated_at', i.updated_at, 'email', i.email) ORDER BY i.created_at, i.id)
    FROM ${sql(t.identities)} i WHERE i.user_id = ${sql(user)}.id), '[]'::json) AS identities_json,
  COALESCE((SELECT json_agg(json_build_object('id', f.id, 'user_id', f.user_id, 'friendly_name', f.friendly_name,
      'factor_type', f.factor_type, 'status', f.status, 'created_at', f.created_at, 'updated_at', f.updated_at,
      'phone', f.phone, 'last_challenged_at', f.last_challenged_at, 'web_authn_aaguid', f.web_authn_aaguid,
      'last_webauthn_challenge_data', f.last_webauthn_challenge_data) ORDER BY f.created_at, f.id)
    FROM ${sql(t.mfa_factors)} f WHERE f.user_id = ${sql(user)}.id), '[]'::json) AS factors_json`

/** A user row read with relationsJson, split into the user and its relations. */
export const withRelations = (
  { factors_json, identities_json, ...user }: UserRow & { readonly identities_json: ReadonlyArray<IdentityJson>; readonly factors_json: ReadonlyArray<FactorJson> }
): { readonly user: UserRow; readonly identities: ReadonlyArray<IdentityRow>; readonly factors: ReadonlyArray<FactorRow> } => ({
  user,
  identities: identities_json.map(identityFromJson),
  factors: factors_json.map(factorFromJson)
})

/** The filter as a LIKE pattern that matches it literally (its %, _ and \\ escaped). */
const likePattern = (filter: string): string => `%${filter.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

const matchesFilter = (row: UserRow, filter: string): boolean => {
  const needle = filter.toLowerCase()
  const fullName = row.raw_user_meta_data?.["full_name"]
  return [row.email, row.phone, typeof fullName === "string" ? fullName : null]
    .some((value) => value !== null && value.toLowerCase().includes(needle))
}

/**
 * What a new user's token columns hold: "" and 0, as GoTrue writes them, never NULL. GoTrue reads these columns into
 * plain strings (and the status into an int), and a NULL in any of them makes every query that loads the user fail
 * ("Database error querying schema"): a database Gatehouse wrote to must stay readable by GoTrue.
 */
const NO_PENDING_TOKENS = {
  confirmation_token: "",
  recovery_token: "",
  email_change_token_new: "",
  email_change_token_current: "",
  email_change: "",
  email_change_confirm_status: 0,
  phone_change: "",
  phone_change_token: "",
  reauthentication_token: ""
} as const

/** The table's generated confirmed_at: LEAST(email_confirmed_at, phone_confirmed_at), which skips NULLs. */
const confirmedAt = (email: Date | null, phone: Date | null): Date | null =>
  email === null ? phone : phone === null ? email : email.getTime() <= phone.getTime() ? email : phone

export type SentAtColumn =
  | "confirmation_sent_at"
  | "recovery_sent_at"
  | "email_change_sent_at"
  | "phone_change_sent_at"
  | "reauthentication_sent_at"

/** The columns that hold a one-time token's hash. */
export type TokenColumn =
  | "confirmation_token"
  | "recovery_token"
  | "email_change_token_new" | "email_change_token_current" | "phone_change_token"

export interface UsersRepoShape {
  readonly findByEmail: (aud: string, email: string) => Effect.Effect<Option.Option<UserRow>>
  readonly findByPhone: (aud: string, phone: string) => Effect.Effect<Option.Option<UserRow>>
  readonly findById: (id: string) => Effect.Effect<Option.Option<UserRow>>
  /** The user whose pending email change is to, or from, this address. */
  readonly findByEmailChange: (aud: string, email: string) => Effect.Effect<Option.Option<UserRow>>
  readonly findByPhoneChange: (aud: string, phone: string) => Effect.Effect<Option.Option<UserRow>>
  /** The user holding this token hash in one of `columns` (a link's token_hash: no address comes with it). */
  readonly findByToken: (columns: ReadonlyArray<TokenColumn>, tokenHash: string) => Effect.Effect<Option.Option<UserRow>>
  /** The user, locked until the caller's transaction ends, so concurrent verifications of one user queue. */
  readonly lockById: (id: string) => Effect.Effect<Option.Option<UserRow>>
  /** Whether another user already holds this email or phone (any audience: the columns are unique). */
  readonly isTaken: (column: "email" | "phone", value: string, exceptUserId: string) => Effect.Effect<boolean>
  readonly insert: (user: UserInsert) => Effect.Effect<UserRow, UniqueViolation>
  readonly update: (id: string, patch: UserPatch, now: Date) => Effect.Effect<UserRow, UniqueViolation>
  readonly remove: (id: string) => Effect.Effect<void>
  /**
   * Stores `next` as the user's password hash only while `previous` is still the stored one, so that a rehash of the
   * password a sign-in just checked never undoes a password change made meanwhile. Answers whether it was stored.
   */
  readonly replacePasswordHash: (id: string, previous: string, next: string) => Effect.Effect<boolean>
  readonly list: (query: UserListQuery) => Effect.Effect<UserList>
  /**
   * Sets a "message sent at" column only if the previous message is older than `window`, in one statement, so
   * parallel requests cannot both pass the frequency check. None: another request sent one meanwhile.
   */
  readonly claimSend: (
    id: string,
    column: SentAtColumn,
    window: Duration.Duration,
    now: Date,
    patch: UserPatch
  ) => Effect.Effect<Option.Option<UserRow>>
}

/** The users table. Lookups are scoped by audience, as GoTrue's are. */
export class UsersRepo extends Effect.Service<UsersRepo>()("auth/UsersRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)
    // 23505 means something to the services (a lost race for an address); any other database failure is a defect.
    const unique = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, UniqueViolation, R> =>
      Effect.catchAll(effect, (error) => (isUniqueViolation(error) ? Effect.fail(new UniqueViolation()) : Effect.die(error)))

    const findByEmail = traced("UsersRepo.findByEmail")(function*(aud: string, email: string) {
      const rows = yield* sql<UserRow>`SELECT * FROM ${sql(t.users)}
        WHERE lower(email) = ${email.toLowerCase()} AND aud = ${aud} AND is_sso_user = false LIMIT 1`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const findByPhone = traced("UsersRepo.findByPhone")(function*(aud: string, phone: string) {
      const rows = yield* sql<UserRow>`SELECT * FROM ${sql(t.users)} WHERE phone = ${phone} AND aud = ${aud} LIMIT 1`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const findById = traced("UsersRepo.findById")(function*(id: string) {
      const rows = yield* sql<UserRow>`SELECT * FROM ${sql(t.users)} WHERE id = ${id}`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const findByEmailChange = traced("UsersRepo.findByEmailChange")(function*(aud: string, email: string) {
      const rows = yield* sql<UserRow>`SELECT * FROM ${sql(t.users)}
        WHERE (lower(email_change) = ${email.toLowerCase()} OR lower(email) = ${email.toLowerCase()})
          AND email_change IS NOT NULL AND email_change <> '' AND aud = ${aud} AND is_sso_user = false LIMIT 1`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const findByPhoneChange = traced("UsersRepo.findByPhoneChange")(function*(aud: string, phone: string) {
      const rows = yield* sql<UserRow>`SELECT * FROM ${sql(t.users)} WHERE phone_change = ${phone} AND aud = ${aud} LIMIT 1`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const findByToken = traced("UsersRepo.findByToken")(function*(columns: ReadonlyArray<TokenColumn>, tokenHash: string) {
      if (tokenHash === "" || columns.length === 0) return Option.none<UserRow>()
      const matches = sql.or(columns.map((column) => sql`${sql(column)} = ${tokenHash}`))
      const rows = yield* sql<UserRow>`SELECT * FROM ${sql(t.users)} WHERE ${matches} LIMIT 1`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const lockById = traced("UsersRepo.lockById")(function*(id: string) {
      const rows = yield* sql<UserRow>`SELECT * FROM ${sql(t.users)} WHERE id = ${id} FOR UPDATE`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const isTaken = traced("UsersRepo.isTaken")(function*(column: "email" | "phone", value: string, exceptUserId: string) {
      const rows = column === "email"
        ? yield* sql`SELECT 1 FROM ${sql(t.users)} WHERE lower(email) = ${value.toLowerCase()} AND is_sso_user = false AND id <> ${exceptUserId}`
        : yield* sql`SELECT 1 FROM ${sql(t.users)} WHERE phone = ${value} AND id <> ${exceptUserId}`
      return rows.length > 0
    }, Effect.orDie)

    const insert = traced("UsersRepo.insert")(function*(user: UserInsert) {
      const [row] = yield* sql<UserRow>`INSERT INTO ${sql(t.users)} ${sql.insert({
        instance_id: "00000000-0000-0000-0000-000000000000",
        id: user.id,
        aud: user.aud,
        role: user.role,
        email: user.email,
        phone: user.phone,
        encrypted_password: user.encrypted_password,
        email_confirmed_at: user.email_confirmed_at,
        phone_confirmed_at: user.phone_confirmed_at,
        raw_app_meta_data: sql.json(user.raw_app_meta_data),
        raw_user_meta_data: sql.json(user.raw_user_meta_data),
        is_anonymous: user.is_anonymous,
        is_sso_user: user.is_sso_user ?? false,
        created_at: user.now,
        updated_at: user.now,
        ...NO_PENDING_TOKENS
      })} RETURNING *`
      return row!
    }, unique)

    const update = traced("UsersRepo.update")(function*(id: string, patch: UserPatch, now: Date) {
      const values: Record<string, unknown> = { ...patch, updated_at: now }
      if (patch.raw_user_meta_data !== undefined) values["raw_user_meta_data"] = sql.json(patch.raw_user_meta_data)
      if (patch.raw_app_meta_data !== undefined) values["raw_app_meta_data"] = sql.json(patch.raw_app_meta_data)
      const [row] = yield* sql<UserRow>`UPDATE ${sql(t.users)} SET ${sql.update(values)} WHERE id = ${id} RETURNING *`
      return row!
    }, unique)

    const remove = traced("UsersRepo.remove")(function*(id: string) {
      yield* sql`DELETE FROM ${sql(t.users)} WHERE id = ${id}`
    }, Effect.orDie)

    const replacePasswordHash = traced("UsersRepo.replacePasswordHash")(function*(id: string, previous: string, next: string) {
      const rows = yield* sql`UPDATE ${sql(t.users)} SET encrypted_password = ${next}
        WHERE id = ${id} AND encrypted_password = ${previous} RETURNING id`
      return rows.length > 0
    }, Effect.orDie)

    type ListRow = UserRow & {
      readonly identities_json: ReadonlyArray<IdentityJson>
      readonly factors_json: ReadonlyArray<FactorJson>
    }
    const listed = (rows: ReadonlyArray<ListRow>) =>
      rows.map(({ factors_json, identities_json, ...user }): ListedUser => ({
        ...user,
        identities: identities_json.map(identityFromJson),
        factors: factors_json.map(factorFromJson)
      }))
    // The page's ids come from an index-only read of (aud, created_at DESC, id DESC); only the page's own rows are
    // then read, with their identities and factors. Every LIMIT and OFFSET is a value the planner sees, so its
    // estimates stay those of a page (an estimate from an unknown LIMIT let JIT compile each call, ~0.6 s at 1M).
    const listPage = (aud: string, slice: PageSlice) =>
      sql<ListRow>`SELECT u.*, ${relationsJson(sql, t, "u")}
        FROM (SELECT id, created_at FROM ${sql(t.users)} WHERE aud = ${aud}
          ORDER BY ${slice.newestFirst ? sql`created_at DESC, id DESC` : sql`created_at, id`}
          LIMIT ${slice.limit} OFFSET ${slice.offset}) k
        JOIN ${sql(t.users)} u ON u.id = k.id
        ORDER BY k.created_at DESC, k.id DESC`

    const list = traced("UsersRepo.list")(function*(query: UserListQuery) {
      const offset = (query.page - 1) * query.perPage
      if (query.filter === "") {
        // The audience's exact count (migration 0024's triggers keep it), then the page from the nearer end.
        const [counted] = yield* sql<{ readonly total: string }>`SELECT coalesce(sum(n), 0)::text AS total
          FROM ${sql(t.gatehouse_row_counts)} WHERE tbl = 'users' AND part = ${query.aud}`
        const total = Number(counted!.total)
        const slice = pageSlice(offset, query.perPage, total)
        return { users: slice === undefined ? [] : listed(yield* listPage(query.aud, slice)), total }
      }
      // Filtered, in one statement: the matches (through the trigram indexes when pg_trgm is there), their count
      // and the page of them. The cost follows the matches: an exact total has to count them all. A page past the
      // end is one row of NULLs that carries the total alone.
      const pattern = likePattern(query.filter)
      const rows = yield* sql<ListRow & { readonly listed_total: string }>`
        WITH matched AS MATERIALIZED (SELECT id, created_at FROM ${sql(t.users)}
            WHERE aud = ${query.aud} AND (email ILIKE ${pattern} OR phone ILIKE ${pattern} OR raw_user_meta_data->>'full_name' ILIKE ${pattern})),
          page AS (SELECT id, created_at FROM matched ORDER BY created_at DESC, id DESC LIMIT ${query.perPage} OFFSET ${offset})
        SELECT (SELECT count(*) FROM matched)::text AS listed_total, u.*, ${relationsJson(sql, t, "u")}
        FROM (SELECT 1) one LEFT JOIN (page JOIN ${sql(t.users)} u ON u.id = page.id) ON true
        ORDER BY page.created_at DESC, page.id DESC`
      const users = listed(rows.filter((row) => row.id !== null).map(({ listed_total: _, ...row }) => row))
      return { users, total: Number(rows[0]?.listed_total ?? 0) }
    }, Effect.orDie)

    const claimSend = traced("UsersRepo.claimSend")(function*(
      id: string,
      column: SentAtColumn,
      window: Duration.Duration,
      now: Date,
      patch: UserPatch
    ) {
      const cutoff = new Date(now.getTime() - Duration.toMillis(window))
      const rows = yield* sql<UserRow>`UPDATE ${sql(t.users)} SET ${sql.update({ ...patch, [column]: now, updated_at: now })}
        WHERE id = ${id} AND (${sql(column)} IS NULL OR ${sql(column)} <= ${cutoff}) RETURNING *`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    return {
      findByEmail, findByPhone, findById, findByEmailChange, findByPhoneChange, findByToken, lockById, isTaken, insert, update, remove,
      replacePasswordHash, list, claimSend
    } satisfies UsersRepoShape
  })
}) {
  /** In memory, with the table's unique keys: email among non-SSO users, and phone. */
  static readonly Test: Layer.Layer<UsersRepo> = Layer.effect(
    UsersRepo,
    Effect.gen(function*() {
      const rows = yield* Ref.make(new Map<string, UserRow>())
      const all = Effect.map(Ref.get(rows), (map) => [...map.values()])
      const first = (predicate: (row: UserRow) => boolean) => Effect.map(all, (list) => Option.fromNullable(list.find(predicate)))
      const clashes = (row: UserRow, others: ReadonlyArray<UserRow>): boolean =>
        others.some((other) =>
          other.id !== row.id && (
            (row.email !== null && !row.is_sso_user && !other.is_sso_user && other.email === row.email) ||
            (row.phone !== null && other.phone === row.phone)
          )
        )
      const write = (row: UserRow) =>
        Ref.modify(rows, (map): readonly [Effect.Effect<UserRow, UniqueViolation>, Map<string, UserRow>] =>
          clashes(row, [...map.values()])
            ? [Effect.fail(new UniqueViolation()), map]
            : [Effect.succeed(row), new Map(map).set(row.id, row)]).pipe(Effect.flatten)
      const existing = (id: string) =>
        Effect.flatMap(Ref.get(rows), (map) => {
          const row = map.get(id)
          return row === undefined ? Effect.dieMessage(`UsersRepo.Test: no user ${id}`) : Effect.succeed(row)
        })

      return UsersRepo.make({
        findByEmail: (aud, email) =>
          first((u) => u.email?.toLowerCase() === email.toLowerCase() && u.aud === aud && !u.is_sso_user),
        findByPhone: (aud, phone) => first((u) => u.phone === phone && u.aud === aud),
        findById: (id) => first((u) => u.id === id),
        findByEmailChange: (aud, email) =>
          first((u) =>
            (u.email_change ?? "") !== "" && u.aud === aud && !u.is_sso_user &&
            (u.email_change!.toLowerCase() === email.toLowerCase() || u.email?.toLowerCase() === email.toLowerCase())
          ),
        findByPhoneChange: (aud, phone) => first((u) => u.phone_change === phone && u.aud === aud),
        findByToken: (columns, tokenHash) =>
          tokenHash === "" ? Effect.succeed(Option.none()) : first((u) => columns.some((column) => u[column] === tokenHash)),
        lockById: (id) => first((u) => u.id === id),
        isTaken: (column, value, exceptUserId) =>
          Effect.map(all, (list) =>
            list.some((u) =>
              u.id !== exceptUserId &&
              (column === "email" ? u.email?.toLowerCase() === value.toLowerCase() && !u.is_sso_user : u.phone === value)
            )),
        insert: (user) =>
          write({
            id: user.id,
            aud: user.aud,
            role: user.role,
            email: user.email,
            encrypted_password: user.encrypted_password,
            email_confirmed_at: user.email_confirmed_at,
            invited_at: null,
            confirmation_sent_at: null,
            recovery_sent_at: null,
            email_change_sent_at: null,
            last_sign_in_at: null,
            raw_app_meta_data: user.raw_app_meta_data,
            raw_user_meta_data: user.raw_user_meta_data,
            created_at: user.now,
            updated_at: user.now,
            phone: user.phone,
            phone_confirmed_at: user.phone_confirmed_at,
            phone_change_sent_at: null,
            ...NO_PENDING_TOKENS,
            confirmed_at: confirmedAt(user.email_confirmed_at, user.phone_confirmed_at),
            banned_until: null,
            reauthentication_sent_at: null,
            is_sso_user: user.is_sso_user ?? false,
            deleted_at: null,
            is_anonymous: user.is_anonymous
          }),
        update: (id, patch, now) =>
          Effect.flatMap(existing(id), (row) => {
            const next = { ...row, ...patch, updated_at: now }
            return write({ ...next, confirmed_at: confirmedAt(next.email_confirmed_at, next.phone_confirmed_at) })
          }),
        remove: (id) =>
          Ref.update(rows, (map) => {
            const next = new Map(map)
            next.delete(id)
            return next
          }),
        replacePasswordHash: (id, previous, next) =>
          Ref.modify(rows, (map): readonly [boolean, Map<string, UserRow>] => {
            const row = map.get(id)
            return row === undefined || row.encrypted_password !== previous
              ? [false, map]
              : [true, new Map(map).set(id, { ...row, encrypted_password: next })]
          }),
        list: (query) =>
          Effect.map(all, (list) => {
            const matching = list
              .filter((u) => u.aud === query.aud && (query.filter === "" || matchesFilter(u, query.filter)))
              .sort((a, b) => b.created_at!.getTime() - a.created_at!.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
            const from = (query.page - 1) * query.perPage
            // The in-memory table knows no identities or factors (no in-memory test serves the admin list).
            const users = matching.slice(from, from + query.perPage).map((user): ListedUser => ({ ...user, identities: [], factors: [] }))
            return { users, total: matching.length }
          }),
        claimSend: (id, column, window, now, patch) =>
          Effect.flatMap(existing(id), (row) => {
            const sentAt = row[column]
            return sentAt !== null && sentAt.getTime() > now.getTime() - Duration.toMillis(window)
              ? Effect.succeed(Option.none())
              : Effect.map(Effect.orDie(write({ ...row, ...patch, [column]: now, updated_at: now })), Option.some)
          })
      })
    })
  )
}
