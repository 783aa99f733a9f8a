import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import type { IdentityRow } from "../domain/UserRow.js"
import { traced } from "../../platform/Traced.js"

export interface IdentityInsert {
  readonly id: string
  readonly provider_id: string
  readonly user_id: string
  readonly identity_data: Record<string, unknown>
  readonly provider: string
  readonly now: Date
}

export interface IdentitiesRepoShape {
  /** A user's identities, oldest first. */
  readonly forUser: (userId: string) => Effect.Effect<ReadonlyArray<IdentityRow>>
  /** The identities of several users in one query (a page of the admin list), each user's oldest first. */
  /** The identity a provider's subject is, in any user. */
  readonly findByProvider: (provider: string, providerId: string) => Effect.Effect<Option.Option<IdentityRow>>
  readonly insert: (identity: IdentityInsert) => Effect.Effect<void>
  /** A sign-in with this identity: the provider's claims as they are now, and the time. */
  readonly signedIn: (id: string, identityData: Record<string, unknown>, now: Date) => Effect.Effect<void>
  /** Deletes a user's identities but one (an unconfirmed account reclaimed by a verified sign-in). */
  readonly removeOthers: (userId: string, keepId: string) => Effect.Effect<void>
  /** Replaces an identity's claims (the table derives its email column from them). */
  readonly updateData: (id: string, identityData: Record<string, unknown>, now: Date) => Effect.Effect<void>
  /** Deletes one identity (manual unlinking). */
  readonly remove: (id: string) => Effect.Effect<void>
  /** Deletes a user's identities (the table also cascades them when the user goes). */
  readonly removeForUser: (userId: string) => Effect.Effect<void>
}

// Generated in the table from identity_data.
const emailOf = (data: Record<string, unknown>): string | null =>
  typeof data["email"] === "string" ? data["email"].toLowerCase() : null

const oldestFirst = (rows: ReadonlyArray<IdentityRow>): ReadonlyArray<IdentityRow> =>
  [...rows].sort((a, b) => a.created_at!.getTime() - b.created_at!.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))

/** The identities table: how a user signs in (email, phone, later OAuth providers). */
export class IdentitiesRepo extends Effect.Service<IdentitiesRepo>()("auth/IdentitiesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)

    const forUser = traced("IdentitiesRepo.forUser")(function*(userId: string) {
      return yield* sql<IdentityRow>`SELECT id, provider_id, user_id, identity_data, provider, last_sign_in_at, created_at,
        updated_at, email FROM ${sql(t.identities)} WHERE user_id = ${userId} ORDER BY created_at, id`
    }, Effect.orDie)

    const findByProvider = traced("IdentitiesRepo.findByProvider")(function*(provider: string, providerId: string) {
      const rows = yield* sql<IdentityRow>`SELECT id, provider_id, user_id, identity_data, provider, last_sign_in_at, created_at,
        updated_at, email FROM ${sql(t.identities)} WHERE provider = ${provider} AND provider_id = ${providerId}`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    const signedIn = traced("IdentitiesRepo.signedIn")(function*(id: string, identityData: Record<string, unknown>, now: Date) {
      yield* sql`UPDATE ${sql(t.identities)} SET identity_data = ${sql.json(identityData)}, last_sign_in_at = ${now},
        updated_at = ${now} WHERE id = ${id}`
    }, Effect.orDie)

    const removeOthers = traced("IdentitiesRepo.removeOthers")(function*(userId: string, keepId: string) {
      yield* sql`DELETE FROM ${sql(t.identities)} WHERE user_id = ${userId} AND id <> ${keepId}`
    }, Effect.orDie)

    const insert = traced("IdentitiesRepo.insert")(function*(identity: IdentityInsert) {
      yield* sql`INSERT INTO ${sql(t.identities)} ${sql.insert({
        id: identity.id,
        provider_id: identity.provider_id,
        user_id: identity.user_id,
        identity_data: sql.json(identity.identity_data),
        provider: identity.provider,
        last_sign_in_at: identity.now,
        created_at: identity.now,
        updated_at: identity.now
      })}`
    }, Effect.orDie)

    const updateData = traced("IdentitiesRepo.updateData")(function*(id: string, identityData: Record<string, unknown>, now: Date) {
      yield* sql`UPDATE ${sql(t.identities)} SET identity_data = ${sql.json(identityData)}, updated_at = ${now} WHERE id = ${id}`
    }, Effect.orDie)

    const remove = traced("IdentitiesRepo.remove")(function*(id: string) {
      yield* sql`DELETE FROM ${sql(t.identities)} WHERE id = ${id}`
    }, Effect.orDie)

    const removeForUser = traced("IdentitiesRepo.removeForUser")(function*(userId: string) {
      yield* sql`DELETE FROM ${sql(t.identities)} WHERE user_id = ${userId}`
    }, Effect.orDie)

    return { forUser, findByProvider, insert, signedIn, removeOthers, updateData, remove, removeForUser } satisfies IdentitiesRepoShape
  })
}) {
  /** In memory. Rows stay when their user is removed: nothing reads identities by anything but a live user's id. */
  static readonly Test: Layer.Layer<IdentitiesRepo> = Layer.effect(
    IdentitiesRepo,
    Effect.map(Ref.make<ReadonlyArray<IdentityRow>>([]), (rows) =>
      IdentitiesRepo.make({
        forUser: (userId) => Effect.map(Ref.get(rows), (all) => oldestFirst(all.filter((row) => row.user_id === userId))),
        findByProvider: (provider, providerId) =>
          Effect.map(Ref.get(rows), (all) => Option.fromNullable(all.find((row) => row.provider === provider && row.provider_id === providerId))),
        signedIn: (id, identityData, now) =>
          Ref.update(rows, (all) =>
            all.map((row) =>
              row.id === id ? { ...row, identity_data: identityData, email: emailOf(identityData), last_sign_in_at: now, updated_at: now } : row
            )),
        removeOthers: (userId, keepId) => Ref.update(rows, (all) => all.filter((row) => row.user_id !== userId || row.id === keepId)),
        insert: (identity) =>
          Ref.update(rows, (all) => [...all, {
            id: identity.id,
            provider_id: identity.provider_id,
            user_id: identity.user_id,
            identity_data: identity.identity_data,
            provider: identity.provider,
            last_sign_in_at: identity.now,
            created_at: identity.now,
            updated_at: identity.now,
            email: emailOf(identity.identity_data)
          }]),
        updateData: (id, identityData, now) =>
          Ref.update(rows, (all) =>
            all.map((row) => row.id === id ? { ...row, identity_data: identityData, email: emailOf(identityData), updated_at: now } : row)),
        remove: (id) => Ref.update(rows, (all) => all.filter((row) => row.id !== id)),
        removeForUser: (userId) => Ref.update(rows, (all) => all.filter((row) => row.user_id !== userId))
      }))
  )
}
