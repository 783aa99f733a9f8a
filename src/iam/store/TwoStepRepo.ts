import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type { IamError } from "../domain/IamError.js"
import type { StoredTicket, TotpFactorState } from "../domain/TwoStepRules.js"
import { catchSql, IamSql } from "../IamSql.js"

/** An account's TOTP factor row. */
export interface TotpFactorRow extends TotpFactorState {
  readonly userId: number
  /** None: enrolled, not yet confirmed with a code (Login ignores it). */
  readonly verifiedAt: Option.Option<Date>
}

interface FactorRow {
  readonly user_id: number
  readonly secret: string
  readonly verified_at: Date | null
  readonly last_step: string | number | null
  readonly failures: number
  readonly failed_since: Date | null
}

const toFactor = (row: FactorRow): TotpFactorRow => ({
  userId: row.user_id,
  secret: row.secret,
  verifiedAt: row.verified_at === null ? Option.none() : Option.some(new Date(row.verified_at)),
  // bigint arrives as a string from pg: a time step (about 5.9e7 today) is far inside a double's exact range.
  lastStep: row.last_step === null ? Option.none() : Option.some(Number(row.last_step)),
  failures: { count: row.failures, since: row.failed_since === null ? undefined : new Date(row.failed_since) }
})

interface TicketRow {
  readonly user_id: number
  readonly expires_at: Date
  readonly failures: number
}

/**
 * The totp_factors and login_tickets tables (migration iam 0005). The lock* statements take the row lock, so that
 * every judgement of a code (LoginSecondStep, VerifyTotpEnrollment, RemoveTotp), on any instance, sees the last one's
 * writes: a code is never accepted twice, and no failure goes uncounted. They join the caller's transaction.
 */
export class TwoStepRepo extends Effect.Service<TwoStepRepo>()("iam/TwoStepRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { table } = yield* IamSql

    const findFactor = (userId: number): Effect.Effect<TotpFactorRow | undefined, IamError> =>
      sql<FactorRow>`SELECT * FROM ${sql(table.totp_factors)} WHERE user_id = ${userId}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toFactor(rows[0])),
        catchSql
      )

    const lockFactor = (userId: number): Effect.Effect<TotpFactorRow | undefined, IamError> =>
      sql<FactorRow>`SELECT * FROM ${sql(table.totp_factors)} WHERE user_id = ${userId} FOR UPDATE`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toFactor(rows[0])),
        catchSql
      )

    /**
     * A new pending factor with `secret`, replacing a pending one (its failures with it: a new secret has had no
     * guesses). False, and nothing written, while an active factor exists.
     */
    const putPending = (userId: number, secret: string, at: Date): Effect.Effect<boolean, IamError> =>
      sql<{ user_id: number }>`INSERT INTO ${sql(table.totp_factors)} AS f (user_id, secret, created_at)
        VALUES (${userId}, ${secret}, ${at})
        ON CONFLICT (user_id) DO UPDATE SET secret = EXCLUDED.secret, created_at = EXCLUDED.created_at,
          last_step = NULL, failures = 0, failed_since = NULL
        WHERE f.verified_at IS NULL
        RETURNING user_id`.pipe(Effect.map((rows) => rows.length > 0), catchSql)

    /** A code was accepted at `step`: remembered, failures forgotten, and the factor active from `activate` on. */
    const accept = (userId: number, step: number, activate: Date | undefined): Effect.Effect<void, IamError> =>
      (activate === undefined
        ? sql`UPDATE ${sql(table.totp_factors)} SET last_step = ${step}, failures = 0, failed_since = NULL WHERE user_id = ${userId}`
        : sql`UPDATE ${sql(table.totp_factors)} SET last_step = ${step}, failures = 0, failed_since = NULL, verified_at = ${activate}
          WHERE user_id = ${userId}`).pipe(Effect.asVoid, catchSql)

    const recordFailures = (userId: number, count: number, since: Date): Effect.Effect<void, IamError> =>
      sql`UPDATE ${sql(table.totp_factors)} SET failures = ${count}, failed_since = ${since} WHERE user_id = ${userId}`.pipe(
        Effect.asVoid,
        catchSql
      )

    /** Removes the factor and every ticket waiting on it. False: there was none. */
    const removeFactor = (userId: number): Effect.Effect<boolean, IamError> =>
      Effect.gen(function*() {
        const removed = yield* sql`DELETE FROM ${sql(table.totp_factors)} WHERE user_id = ${userId} RETURNING user_id`
        yield* sql`DELETE FROM ${sql(table.login_tickets)} WHERE user_id = ${userId}`
        return removed.length > 0
      }).pipe(catchSql)

    const insertTicket = (digest: string, userId: number, expiresAt: Date): Effect.Effect<void, IamError> =>
      sql`INSERT INTO ${sql(table.login_tickets)} ${sql.insert({ ticket_hash: digest, user_id: userId, expires_at: expiresAt })}`.pipe(
        Effect.asVoid,
        catchSql
      )

    const lockTicket = (digest: string): Effect.Effect<StoredTicket | undefined, IamError> =>
      sql<TicketRow>`SELECT user_id, expires_at, failures FROM ${sql(table.login_tickets)} WHERE ticket_hash = ${digest} FOR UPDATE`.pipe(
        Effect.map(([row]) => row === undefined ? undefined : { userId: row.user_id, expiresAt: new Date(row.expires_at), failures: row.failures }),
        catchSql
      )

    const countTicketFailure = (digest: string): Effect.Effect<void, IamError> =>
      sql`UPDATE ${sql(table.login_tickets)} SET failures = failures + 1 WHERE ticket_hash = ${digest}`.pipe(Effect.asVoid, catchSql)

    const deleteTicket = (digest: string): Effect.Effect<void, IamError> =>
      sql`DELETE FROM ${sql(table.login_tickets)} WHERE ticket_hash = ${digest}`.pipe(Effect.asVoid, catchSql)

    /** Deletes the tickets expired before `before`: none of them can be redeemed. */
    const sweepTickets = (before: Date): Effect.Effect<void, IamError> =>
      sql`DELETE FROM ${sql(table.login_tickets)} WHERE expires_at < ${before}`.pipe(Effect.asVoid, catchSql)

    return {
      findFactor, lockFactor, putPending, accept, recordFailures, removeFactor,
      insertTicket, lockTicket, countTicketFailure, deleteTicket, sweepTickets
    }
  })
}) {
  /** In memory, for services tested without a database: one process, no locks (Transactions.Test runs steps as they are). */
  static readonly Test: Layer.Layer<TwoStepRepo> = Layer.effect(
    TwoStepRepo,
    Effect.gen(function*() {
      const factors = yield* Ref.make<ReadonlyMap<number, TotpFactorRow>>(new Map())
      const tickets = yield* Ref.make<ReadonlyMap<string, StoredTicket>>(new Map())
      const withFactor = (userId: number, change: (factor: TotpFactorRow) => TotpFactorRow) =>
        Ref.update(factors, (all) => {
          const factor = all.get(userId)
          return factor === undefined ? all : new Map([...all, [userId, change(factor)]])
        })
      const findFactor = (userId: number) => Effect.map(Ref.get(factors), (all) => all.get(userId))
      const without = <K, V>(all: ReadonlyMap<K, V>, drop: (key: K, value: V) => boolean): ReadonlyMap<K, V> =>
        new Map([...all].filter(([key, value]) => !drop(key, value)))
      return TwoStepRepo.make({
        findFactor,
        lockFactor: findFactor,
        putPending: (userId, secret) =>
          Ref.modify(factors, (all) => {
            const existing = all.get(userId)
            if (existing !== undefined && Option.isSome(existing.verifiedAt)) return [false, all]
            const pending: TotpFactorRow = {
              userId, secret, verifiedAt: Option.none(), lastStep: Option.none(), failures: { count: 0, since: undefined }
            }
            return [true, new Map([...all, [userId, pending]])]
          }),
        accept: (userId, step, activate) =>
          withFactor(userId, (factor) => ({
            ...factor,
            lastStep: Option.some(step),
            failures: { count: 0, since: undefined },
            verifiedAt: activate === undefined ? factor.verifiedAt : Option.some(activate)
          })),
        recordFailures: (userId, count, since) => withFactor(userId, (factor) => ({ ...factor, failures: { count, since } })),
        removeFactor: (userId) =>
          Effect.gen(function*() {
            const removed = (yield* Ref.get(factors)).has(userId)
            yield* Ref.update(factors, (all) => without(all, (id) => id === userId))
            yield* Ref.update(tickets, (all) => without(all, (_, ticket) => ticket.userId === userId))
            return removed
          }),
        insertTicket: (digest, userId, expiresAt) => Ref.update(tickets, (all) => new Map([...all, [digest, { userId, expiresAt, failures: 0 }]])),
        lockTicket: (digest) => Effect.map(Ref.get(tickets), (all) => all.get(digest)),
        countTicketFailure: (digest) =>
          Ref.update(tickets, (all) => {
            const ticket = all.get(digest)
            return ticket === undefined ? all : new Map([...all, [digest, { ...ticket, failures: ticket.failures + 1 }]])
          }),
        deleteTicket: (digest) => Ref.update(tickets, (all) => without(all, (key) => key === digest)),
        sweepTickets: (before) => Ref.update(tickets, (all) => without(all, (_, ticket) => ticket.expiresAt.getTime() < before.getTime()))
      })
    })
  )
}
