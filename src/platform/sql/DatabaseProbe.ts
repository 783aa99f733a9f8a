import * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

/**
 * A probe of the database, one round trip: the health checks of both products (GET /health, gRPC's Health service)
 * ask whether this instance can reach it, without holding SQL of their own. Built once, where the layer has the
 * client; run per check.
 */
export const databaseProbe: Effect.Effect<Effect.Effect<void, SqlError.SqlError>, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => Effect.asVoid(sql`SELECT 1`)
)

/**
 * Whether LISTEN may be used on this database. Not on the embedded PGlite: its socket server is one session, and a
 * LISTEN there stalls every other query (it needs none: the data-directory lock allows one process only).
 */
export const detectListenSupport: Effect.Effect<boolean, never, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql<{ version: string }>`SELECT version()`.pipe(
      Effect.map((rows) => !(rows[0]?.version ?? "").includes("PGlite")),
      Effect.orElseSucceed(() => false)
    )
)
