import { randomUUID } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import type { SqlError } from "@effect/sql/SqlError"
import { Duration, Effect, Option } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { authTables } from "../AuthTables.js"
import type { IdentityRow, UserRow } from "../domain/UserRow.js"

export interface NewUser {
  readonly aud: string
  readonly role: string
  readonly email: string | null
  readonly phone: string | null
  readonly encryptedPassword: string | null
  readonly userMetadata: Record<string, unknown>
  readonly provider: "email" | "phone" | null
  readonly emailConfirmedAt: Date | null
  readonly phoneConfirmedAt: Date | null
  readonly isAnonymous: boolean
  readonly now: Date
}

/** Column values a service may change on a user; every other column stays as it is. */
export type UserPatch = Partial<{
  readonly encrypted_password: string | null
  readonly email_confirmed_at: Date | null
  readonly phone_confirmed_at: Date | null
  readonly confirmation_token: string | null
  readonly confirmation_sent_at: Date | null
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
  readonly raw_user_meta_data: Record<string, unknown>
  readonly raw_app_meta_data: Record<string, unknown>
  readonly email: string | null
  readonly phone: string | null
  readonly is_anonymous: boolean
}>

/** The users and identities tables. Lookups are scoped by audience, as GoTrue's are. */
export class Users extends Effect.Service<Users>()("auth/Users", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const config = yield* AppConfig
    const t = authTables(config.db.namespace)

    const findByEmail = Effect.fn("Users.findByEmail")(function*(aud: string, email: string): Effect.fn.Return<Option.Option<UserRow>, SqlError> {
      const rows = yield* sql<UserRow>`SELECT * FROM ${sql(t.users)}
        WHERE lower(email) = ${email.toLowerCase()} AND aud = ${aud} AND is_sso_user = false LIMIT 1`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const findByPhone = Effect.fn("Users.findByPhone")(function*(aud: string, phone: string): Effect.fn.Return<Option.Option<UserRow>, SqlError> {
      const rows = yield* sql<UserRow>`SELECT * FROM ${sql(t.users)} WHERE phone = ${phone} AND aud = ${aud} LIMIT 1`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const findById = Effect.fn("Users.findById")(function*(id: string): Effect.fn.Return<Option.Option<UserRow>, SqlError> {
      const rows = yield* sql<UserRow>`SELECT * FROM ${sql(t.users)} WHERE id = ${id}`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    /**
     * The bearer check's one query: the user, and whether the token's session still exists for that user
     * (`sessionId` undefined: no session to check).
     */
    const findForSession = Effect.fn("Users.findForSession")(function*(
      userId: string,
      sessionId: string | undefined
    ): Effect.fn.Return<Option.Option<{ readonly user: UserRow; readonly sessionExists: boolean }>, SqlError> {
      const rows = yield* sql<UserRow & { readonly session_exists: boolean }>`
        SELECT u.*, ${sessionId === undefined
          ? sql`true`
          : sql`EXISTS (SELECT 1 FROM ${sql(t.sessions)} s WHERE s.id = ${sessionId} AND s.user_id = u.id)`} AS session_exists
        FROM ${sql(t.users)} u WHERE u.id = ${userId}`
      return Option.map(Option.fromNullable(rows[0]), ({ session_exists, ...user }) => ({ user, sessionExists: session_exists }))
    }, Effect.orDie)

    /** Whether another user already holds this email or phone (any audience: the columns are unique). */
    const isTaken = Effect.fn("Users.isTaken")(function*(
      column: "email" | "phone",
      value: string,
      exceptUserId: string
    ): Effect.fn.Return<boolean, SqlError> {
      const rows = column === "email"
        ? yield* sql`SELECT 1 FROM ${sql(t.users)} WHERE lower(email) = ${value.toLowerCase()} AND is_sso_user = false AND id <> ${exceptUserId}`
        : yield* sql`SELECT 1 FROM ${sql(t.users)} WHERE phone = ${value} AND id <> ${exceptUserId}`
      return rows.length > 0
    }, Effect.orDie)

    const identities = Effect.fn("Users.identities")(function*(userId: string): Effect.fn.Return<ReadonlyArray<IdentityRow>, SqlError> {
      return yield* sql<IdentityRow>`SELECT id, provider_id, user_id, identity_data, provider, last_sign_in_at, created_at,
        updated_at, email FROM ${sql(t.identities)} WHERE user_id = ${userId} ORDER BY created_at, id`
    }, Effect.orDie)

    /**
     * Inserts a user and, for email or phone users, its identity; run inside the caller's transaction. As in
     * GoTrue, the identity's claims (sub, email or phone, email_verified, phone_verified) are merged over the
     * user's metadata, and the user's copy says whether the address is confirmed while the identity's stays false.
     */
    const create = Effect.fn("Users.create")(function*(user: NewUser): Effect.fn.Return<UserRow, SqlError> {
      const id = randomUUID()
      const appMetadata = user.provider === null ? {} : { provider: user.provider, providers: [user.provider] }
      const claims = {
        sub: id,
        ...(user.email !== null ? { email: user.email } : {}),
        ...(user.phone !== null ? { phone: user.phone } : {})
      }
      const userMetadata = user.provider === null ? user.userMetadata : {
        ...user.userMetadata,
        ...claims,
        email_verified: user.emailConfirmedAt !== null,
        phone_verified: user.phoneConfirmedAt !== null
      }
      const [row] = yield* sql<UserRow>`INSERT INTO ${sql(t.users)} ${sql.insert({
        instance_id: "00000000-0000-0000-0000-000000000000",
        id,
        aud: user.aud,
        role: user.role,
        email: user.email,
        phone: user.phone,
        encrypted_password: user.encryptedPassword ?? "",
        email_confirmed_at: user.emailConfirmedAt,
        phone_confirmed_at: user.phoneConfirmedAt,
        raw_app_meta_data: sql.json(appMetadata),
        raw_user_meta_data: sql.json(userMetadata),
        is_anonymous: user.isAnonymous,
        created_at: user.now,
        updated_at: user.now
      })} RETURNING *`
      if (user.provider !== null) {
        const identityData = { ...user.userMetadata, ...claims, email_verified: false, phone_verified: false }
        yield* sql`INSERT INTO ${sql(t.identities)} ${sql.insert({
          id: randomUUID(),
          provider_id: id,
          user_id: id,
          identity_data: sql.json(identityData),
          provider: user.provider,
          last_sign_in_at: user.now,
          created_at: user.now,
          updated_at: user.now
        })}`
      }
      return row!
    }, Effect.orDie)

    const update = Effect.fn("Users.update")(function*(id: string, patch: UserPatch, now: Date): Effect.fn.Return<UserRow, SqlError> {
      const values: Record<string, unknown> = { ...patch, updated_at: now }
      if (patch.raw_user_meta_data !== undefined) values["raw_user_meta_data"] = sql.json(patch.raw_user_meta_data)
      if (patch.raw_app_meta_data !== undefined) values["raw_app_meta_data"] = sql.json(patch.raw_app_meta_data)
      const [row] = yield* sql<UserRow>`UPDATE ${sql(t.users)} SET ${sql.update(values)} WHERE id = ${id} RETURNING *`
      return row!
    }, Effect.orDie)

    const remove = Effect.fn("Users.remove")(function*(id: string): Effect.fn.Return<void, SqlError> {
      yield* sql`DELETE FROM ${sql(t.users)} WHERE id = ${id}`
    }, Effect.orDie)

    /**
     * Sets a "message sent at" column only if the previous message is older than `window`, in one statement, so
     * parallel requests cannot both pass the frequency check. None: another request sent one meanwhile.
     */
    const claimSend = Effect.fn("Users.claimSend")(function*(
      id: string,
      column: "confirmation_sent_at" | "reauthentication_sent_at",
      window: Duration.Duration,
      now: Date,
      patch: UserPatch
    ): Effect.fn.Return<Option.Option<UserRow>, SqlError> {
      const cutoff = new Date(now.getTime() - Duration.toMillis(window))
      const rows = yield* sql<UserRow>`UPDATE ${sql(t.users)} SET ${sql.update({ ...patch, [column]: now, updated_at: now })}
        WHERE id = ${id} AND (${sql(column)} IS NULL OR ${sql(column)} <= ${cutoff}) RETURNING *`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    return { claimSend, remove, findForSession, findByEmail, findByPhone, findById, isTaken, identities, create, update } as const
  })
}) {}
