import * as SqlClient from "@effect/sql/SqlClient"
import type * as Statement from "@effect/sql/Statement"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import { type Admission, admitRequest, isRefilled, refundRequest, type RequestRate } from "../../domain/RequestRate.js"
import type { IamError } from "../domain/IamError.js"
import { admitLogin, type FailureCount, isForgotten, type LoginAdmission, type LoginBackoff } from "../domain/LoginBackoff.js"
import { catchSql, IamSql } from "../IamSql.js"

/**
 * The login throttle's two tables (migration iam/0003), which every instance shares: `login_failures`, an account's
 * failures in a row and until when its next attempt waits (domain/LoginBackoff), and `login_clients`, a client's
 * bucket of failures as a theoretical arrival time (domain/RequestRate). Each decision is one statement whose
 * row lock orders concurrent attempts from any number of instances, and whose WHERE is the pure rule's test.
 */
export class LoginThrottleRepo extends Effect.Service<LoginThrottleRepo>()("iam/LoginThrottleRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { table } = yield* IamSql

    /**
     * admitLogin, in SQL: a record forgotten counts as none; one still waiting refuses and is not changed; any
     * other is charged one failure and the wait backoffMs gives it (2^(failures - after) first waits, capped).
     * A refusal reads the row back for its wait in the same round trip. When it reads none (a row another instance
     * inserted after this statement's snapshot was taken, which the upsert still saw and locked), the shortest
     * wait is a safe answer: trying again after it is decided afresh.
     */
    const admitAccount = (account: string, nowMs: number, backoff: LoginBackoff): Effect.Effect<LoginAdmission, IamError> =>
      Effect.gen(function*() {
        const now = sql`${nowMs}::bigint`
        const fresh = sql`a.blocked_until + ${backoff.forgetAfterMs}::bigint <= ${now}`
        const failures = sql`(CASE WHEN ${fresh} THEN 1 ELSE a.failures + 1 END)`
        // In double precision, as backoffMs computes it (a whole number times a power of two is exact), capped before
        // it becomes a bigint again, so no wait overflows.
        const wait = (n: Statement.Fragment) =>
          sql`(CASE WHEN ${n} < ${backoff.after}::int THEN 0::bigint
            ELSE LEAST(${backoff.maxMs}::float8, ${backoff.firstMs}::float8 * power(2, LEAST(${n} - ${backoff.after}::int, 40)))::bigint END)`
        const rows = yield* sql<{ readonly allowed: boolean; readonly failures: number; readonly blocked_until: string }>`
          WITH admitted AS (
            INSERT INTO ${sql(table.login_failures)} AS a (account, failures, blocked_until)
            VALUES (${account}, 1, ${now} + ${wait(sql`1`)})
            ON CONFLICT (account) DO UPDATE SET failures = ${failures}, blocked_until = ${now} + ${wait(failures)}
            WHERE ${fresh} OR a.blocked_until <= ${now}
            RETURNING failures, blocked_until
          )
          SELECT true AS allowed, failures, blocked_until FROM admitted
          UNION ALL
          SELECT false AS allowed, failures, blocked_until FROM ${sql(table.login_failures)}
            WHERE account = ${account} AND NOT EXISTS (SELECT 1 FROM admitted)`
        const row = rows[0]
        // pg hands bigint over as a string; milliseconds since the epoch are far inside a double's exact integers.
        if (row?.allowed === true) {
          return { allowed: true, count: { failures: row.failures, blockedUntilMs: Number(row.blocked_until) } } satisfies LoginAdmission
        }
        const waited = row === undefined ? undefined : Number(row.blocked_until) - nowMs
        return { allowed: false, retryAfterMs: waited !== undefined && waited > 0 ? waited : backoff.firstMs } satisfies LoginAdmission
      }).pipe(catchSql)

    /** A success: the account's failures are forgotten. */
    const clearAccount = (account: string): Effect.Effect<void, IamError> =>
      sql`DELETE FROM ${sql(table.login_failures)} WHERE account = ${account}`.pipe(Effect.asVoid, catchSql)

    /** admitRequest, in SQL, as the auth product's RateLimitsRepo does it: one attempt of `client` at `nowMs`. */
    const admitClient = (client: string, nowMs: number, rate: RequestRate): Effect.Effect<Admission, IamError> =>
      Effect.gen(function*() {
        const now = sql`${nowMs}::bigint`
        const interval = sql`${rate.intervalMs}::bigint`
        const rows = yield* sql<{ readonly allowed: boolean; readonly tat: string }>`
          WITH admitted AS (
            INSERT INTO ${sql(table.login_clients)} AS c (client, tat) VALUES (${client}, ${now} + ${interval})
            ON CONFLICT (client) DO UPDATE SET tat = GREATEST(c.tat, ${now}) + ${interval}
            WHERE GREATEST(c.tat, ${now}) - ${now} <= ${rate.toleranceMs}::bigint
            RETURNING tat
          )
          SELECT true AS allowed, tat FROM admitted
          UNION ALL
          SELECT false AS allowed, tat FROM ${sql(table.login_clients)}
            WHERE client = ${client} AND NOT EXISTS (SELECT 1 FROM admitted)`
        const row = rows[0]
        if (row?.allowed === true) return { allowed: true as const, tat: Number(row.tat) }
        const seen = row === undefined ? undefined : admitRequest(Number(row.tat), nowMs, rate)
        return seen !== undefined && !seen.allowed ? seen : { allowed: false as const, retryAfterMs: rate.intervalMs }
      }).pipe(catchSql)

    /** refundRequest: an attempt of `client` that succeeded takes nothing from its bucket. */
    const refundClient = (client: string, rate: RequestRate): Effect.Effect<void, IamError> =>
      sql`UPDATE ${sql(table.login_clients)} SET tat = tat - ${rate.intervalMs}::bigint WHERE client = ${client}`.pipe(
        Effect.asVoid,
        catchSql
      )

    /** Deletes the records that change no decision any more (forgotten failures, refilled buckets); how many. */
    const sweep = (nowMs: number, backoff: LoginBackoff): Effect.Effect<number, IamError> =>
      Effect.gen(function*() {
        const [row] = yield* sql<{ readonly swept: number }>`
          WITH accounts AS (
            DELETE FROM ${sql(table.login_failures)} WHERE blocked_until + ${backoff.forgetAfterMs}::bigint <= ${nowMs}::bigint RETURNING 1
          ), clients AS (
            DELETE FROM ${sql(table.login_clients)} WHERE tat <= ${nowMs}::bigint RETURNING 1
          )
          SELECT (SELECT count(*) FROM accounts)::int + (SELECT count(*) FROM clients)::int AS swept`
        return row?.swept ?? 0
      }).pipe(catchSql)

    return { admitAccount, clearAccount, admitClient, refundClient, sweep }
  })
}) {
  /** In memory: one process's records, decided by the same pure rules. */
  static readonly Test: Layer.Layer<LoginThrottleRepo> = Layer.effect(
    LoginThrottleRepo,
    Effect.gen(function*() {
      const accounts = yield* Ref.make(new Map<string, FailureCount>())
      const clients = yield* Ref.make(new Map<string, number>())
      return LoginThrottleRepo.make({
        admitAccount: (account, nowMs, backoff) =>
          Ref.modify(accounts, (map) => {
            const admission = admitLogin(map.get(account), nowMs, backoff)
            return [admission, admission.allowed ? new Map(map).set(account, admission.count) : map]
          }),
        clearAccount: (account) =>
          Ref.update(accounts, (map) => {
            const next = new Map(map)
            next.delete(account)
            return next
          }),
        admitClient: (client, nowMs, rate) =>
          Ref.modify(clients, (map) => {
            const admission = admitRequest(map.get(client), nowMs, rate)
            return [admission, admission.allowed ? new Map(map).set(client, admission.tat) : map]
          }),
        refundClient: (client, rate) =>
          Ref.update(clients, (map) => {
            const tat = map.get(client)
            return tat === undefined ? map : new Map(map).set(client, refundRequest(tat, rate))
          }),
        sweep: (nowMs, backoff) =>
          Effect.gen(function*() {
            const keptAccounts = yield* Ref.modify(accounts, (map) => {
              const kept = new Map([...map].filter(([, count]) => !isForgotten(count, nowMs, backoff)))
              return [map.size - kept.size, kept]
            })
            const keptClients = yield* Ref.modify(clients, (map) => {
              const kept = new Map([...map].filter(([, tat]) => !isRefilled(tat, nowMs)))
              return [map.size - kept.size, kept]
            })
            return keptAccounts + keptClients
          })
      })
    })
  )
}
