import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import type { IamError } from "../domain/IamError.js"
import { catchSql, IamSql } from "../IamSql.js"

/** A refresh token as it was recorded: signing its claims again with `issuedAt` gives the very same token. */
export interface FamilyToken {
  readonly jti: string
  /** The family: one sign-in and every refresh of it. Its access tokens carry it too. */
  readonly family: string
  readonly userId: number
  /** The token this one was exchanged for; null for a sign-in's first. */
  readonly parent: string | null
  readonly issuedAt: Date
  readonly expiresAt: Date
  /** The session's fixed end (GenerateToken's ttl_seconds), kept on every token of the family; null: none. */
  readonly sessionEndsAt: Date | null
  /** When it was exchanged for its child. */
  readonly spentAt: Date | null
  /** When its family was revoked (logout, reuse). */
  readonly revokedAt: Date | null
}

export type NewFamilyToken = Omit<FamilyToken, "spentAt" | "revokedAt">

/** A presented refresh token, locked for its exchange, and the child it was exchanged for when it is spent. */
export interface LockedToken {
  readonly token: FamilyToken
  readonly child: FamilyToken | undefined
}

interface Row {
  readonly jti: string
  readonly family_id: string
  readonly user_id: number
  readonly parent_jti: string | null
  readonly issued_at: Date
  readonly expires_at: Date
  readonly spent_at: Date | null
  readonly revoked_at: Date | null
  readonly session_ends_at: Date | null
}

const dateOrNull = (value: Date | null): Date | null => (value === null ? null : new Date(value))

const toToken = (row: Row): FamilyToken => ({
  jti: row.jti,
  family: row.family_id,
  userId: row.user_id,
  parent: row.parent_jti,
  issuedAt: new Date(row.issued_at),
  expiresAt: new Date(row.expires_at),
  sessionEndsAt: dateOrNull(row.session_ends_at),
  spentAt: dateOrNull(row.spent_at),
  revokedAt: dateOrNull(row.revoked_at)
})

/**
 * The refresh_tokens table: each sign-in's refresh tokens, a family in which every token but the newest was spent
 * on its child. Failures are IamError already (catchSql, at the repo boundary). The statements join the caller's
 * transaction (Transactions) when one is open.
 */
export class TokenFamiliesRepo extends Effect.Service<TokenFamiliesRepo>()("iam/TokenFamiliesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { table } = yield* IamSql

    const insert = (token: NewFamilyToken): Effect.Effect<void, IamError> =>
      sql`INSERT INTO ${sql(table.refresh_tokens)} ${sql.insert({
        jti: token.jti,
        family_id: token.family,
        user_id: token.userId,
        parent_jti: token.parent,
        issued_at: token.issuedAt,
        expires_at: token.expiresAt,
        session_ends_at: token.sessionEndsAt
      })}`.pipe(Effect.asVoid, catchSql)

    /**
     * The row lock orders concurrent refreshes of one token, on any instance: the first rotates it; each of the
     * others is granted the lock once that rotation committed, and sees the token spent and its child. The child is
     * read after the lock was granted, in a statement of its own with its own snapshot, so a child committed while
     * this one waited is visible.
     */
    const lockForRefresh = (jti: string): Effect.Effect<LockedToken | undefined, IamError> =>
      Effect.gen(function*() {
        const [row] = yield* sql<Row>`SELECT * FROM ${sql(table.refresh_tokens)} WHERE jti = ${jti} FOR UPDATE`
        if (row === undefined) return undefined
        const token = toToken(row)
        if (token.spentAt === null) return { token, child: undefined }
        const [child] = yield* sql<Row>`SELECT * FROM ${sql(table.refresh_tokens)} WHERE parent_jti = ${jti}`
        return { token, child: child === undefined ? undefined : toToken(child) }
      }).pipe(catchSql)

    const spend = (jti: string, at: Date): Effect.Effect<void, IamError> =>
      sql`UPDATE ${sql(table.refresh_tokens)} SET spent_at = ${at} WHERE jti = ${jti}`.pipe(Effect.asVoid, catchSql)

    /** Revokes every token of the families not revoked yet; a token revoked earlier keeps its time. */
    const revokeFamilies = (families: ReadonlyArray<string>, at: Date): Effect.Effect<void, IamError> =>
      families.length === 0 ? Effect.void : sql`UPDATE ${sql(table.refresh_tokens)} SET revoked_at = ${at}
        WHERE family_id IN ${sql.in(families)} AND revoked_at IS NULL`.pipe(Effect.asVoid, catchSql)

    /** The families of a user that still have an unrevoked token unexpired at `at`: its sessions still open. */
    const openFamiliesOf = (userId: number, at: Date): Effect.Effect<ReadonlyArray<string>, IamError> =>
      sql<{ family_id: string }>`SELECT DISTINCT family_id FROM ${sql(table.refresh_tokens)}
        WHERE user_id = ${userId} AND revoked_at IS NULL AND expires_at > ${at}`.pipe(
        Effect.map((rows) => rows.map((r) => r.family_id)),
        catchSql
      )

    return { insert, lockForRefresh, spend, revokeFamilies, openFamiliesOf }
  })
}) {
  /** In memory, for services tested without a database: one process, no locks (Transactions.Test runs steps as they are). */
  static readonly Test: Layer.Layer<TokenFamiliesRepo> = Layer.effect(
    TokenFamiliesRepo,
    Effect.map(Ref.make<ReadonlyArray<FamilyToken>>([]), (rows) => {
      const update = (matches: (token: FamilyToken) => boolean, change: (token: FamilyToken) => FamilyToken) =>
        Ref.update(rows, (all) => all.map((token) => (matches(token) ? change(token) : token)))
      return TokenFamiliesRepo.make({
        insert: (token) => Ref.update(rows, (all) => [...all, { ...token, spentAt: null, revokedAt: null }]),
        lockForRefresh: (jti) =>
          Effect.map(Ref.get(rows), (all) => {
            const token = all.find((t) => t.jti === jti)
            if (token === undefined) return undefined
            return { token, child: token.spentAt === null ? undefined : all.find((t) => t.parent === jti) }
          }),
        spend: (jti, at) => update((t) => t.jti === jti, (t) => ({ ...t, spentAt: at })),
        revokeFamilies: (families, at) =>
          update((t) => families.includes(t.family) && t.revokedAt === null, (t) => ({ ...t, revokedAt: at })),
        openFamiliesOf: (userId, at) =>
          Effect.map(Ref.get(rows), (all) => [
            ...new Set(
              all.filter((t) => t.userId === userId && t.revokedAt === null && t.expiresAt.getTime() > at.getTime()).map((t) => t.family)
            )
          ])
      })
    })
  )
}
