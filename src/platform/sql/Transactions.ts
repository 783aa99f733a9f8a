import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * The transaction boundary, as a service: feature services say which of their steps commit together, and repos
 * run inside whatever transaction is open. Live opens a database transaction (repos on the same SqlClient join
 * it); Test runs the steps as they are, so a service's rules can be tested over in-memory repos.
 */
export class Transactions extends Context.Tag("platform/Transactions")<Transactions, {
  readonly run: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
}>() {
  static readonly Live: Layer.Layer<Transactions, never, SqlClient.SqlClient> = Layer.effect(
    Transactions,
    Effect.map(SqlClient.SqlClient, (sql) => ({ run: sql.withTransaction }))
  )

  static readonly Test: Layer.Layer<Transactions> = Layer.succeed(Transactions, { run: (effect) => effect })
}
