import type * as SqlClient from "@effect/sql/SqlClient"
import { TransactionConnection } from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import type Pg from "pg"

// The pg pool under each client Database.ts made (keyed by the client, so a client made anywhere else, as a test's
// second pool, is never run on a pool that is not its own).
const pools = new WeakMap<SqlClient.SqlClient, Pg.Pool>()

/** Says that `client` sends its statements to `pool` (Database.ts, for the clients it makes). */
export const registerPool = (client: SqlClient.SqlClient, pool: Pg.Pool): void => void pools.set(client, pool)

/** The pool registered for `client`, if any. */
export const poolOf = (client: SqlClient.SqlClient): Pg.Pool | undefined => pools.get(client)

/**
 * Runs `statement` of `client`, outside a transaction, straight on the client's pool: the same text, parameters,
 * connections and row parsing, without @effect/sql's per-statement span, scope and connection plumbing, which cost
 * about 0.15 ms of CPU a statement on this machine, as much as the round trip itself (issue 30: the hot routes
 * run one or two statements). Inside a transaction (its connection), with tracing on (the statement's span), or
 * for a client no pool was registered for, it runs as the statement would anyway.
 *
 * For short statements only: an interrupted fiber does not cancel the statement on the server, which runs to its
 * end and gives its connection back (@effect/sql would cancel it).
 */
export const onPool = <A extends object>(
  client: SqlClient.SqlClient,
  statement: Statement.Statement<A>
): Effect.Effect<ReadonlyArray<A>, SqlError> => {
  const pool = poolOf(client)
  if (pool === undefined) return statement
  return Effect.withFiberRuntime((fiber) => {
    const inTransaction = Option.isSome(Context.getOption(fiber.getFiberRef(FiberRef.currentContext), TransactionConnection))
    if (inTransaction || fiber.getFiberRef(FiberRef.currentTracerEnabled)) {
      return statement
    }
    const [text, params] = statement.compile()
    return Effect.async<ReadonlyArray<A>, SqlError>((resume) => {
      pool.query(text, params as Array<unknown>, (cause, result) => {
        resume(
          cause
            ? Effect.fail(new SqlError({ cause, message: "Failed to execute statement" }))
            : Effect.succeed(result.rows as Array<A>)
        )
      })
    })
  })
}
