import type * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { PlatformConfig } from "../config/PlatformConfig.js"
import { databaseProbe, detectListenSupport } from "../platform/sql/DatabaseProbe.js"
import { tablePrefix } from "../platform/sql/Migrator.js"
import { isUnavailable, sqlState } from "../platform/sql/SqlErrors.js"
import { qualifiedTables } from "../platform/sql/Tables.js"
import { IamError } from "./domain/IamError.js"

const TABLES = ["users", "roles", "permissions", "user_roles", "role_permissions", "refresh_tokens", "revocations",
  "policy_version", "login_failures", "login_clients", "totp_factors", "login_tickets", "oauth_flows", "oauth_links"] as const
export type IamTable = (typeof TABLES)[number]

/**
 * IAM's SQL plumbing, below its repos: the tables' qualified names (schema `iam`, DB_NAMESPACE prefix), the
 * notification channels, what the database allows (LISTEN) and whether it answers. The repos (*Repo.ts) hold
 * the statements; the two probes are the platform's (platform/sql/DatabaseProbe).
 */
export class IamSql extends Context.Tag("iam/IamSql")<IamSql, {
  readonly table: Readonly<Record<IamTable, string>>
  readonly channel: { readonly policy: string; readonly revocations: string }
  /**
   * Whether LISTEN may be used. Not on the embedded PGlite: its socket server is one session, and a LISTEN
   * there stalls every other query. It needs none anyway: the data-directory lock allows one process only.
   */
  readonly listenSupported: boolean
  /** Whether the database answers a trivial query now: the gRPC health check's SERVING. */
  readonly reachable: Effect.Effect<boolean>
}>() {
  static readonly layer: Layer.Layer<IamSql, never, PlatformConfig | SqlClient.SqlClient> = Layer.effect(
    IamSql,
    Effect.gen(function*() {
      const config = yield* PlatformConfig
      const listenSupported = yield* detectListenSupport
      const probe = yield* databaseProbe
      const prefix = tablePrefix(config.db.namespace)
      return {
        table: qualifiedTables("iam", config.db.namespace, TABLES),
        channel: { policy: `${prefix}iam_policy`, revocations: `${prefix}iam_revocations` },
        listenSupported,
        reachable: probe.pipe(Effect.as(true), Effect.orElseSucceed(() => false))
      }
    })
  )

  /** Names without a database, for services over in-memory repos: nothing to LISTEN to. */
  static readonly Test: Layer.Layer<IamSql> = Layer.succeed(IamSql, {
    table: qualifiedTables("iam", "", TABLES),
    channel: { policy: "iam_policy", revocations: "iam_revocations" },
    listenSupported: false,
    reachable: Effect.succeed(true)
  })
}

/**
 * The repo boundary: a database that cannot be reached is UNAVAILABLE (the client may retry); any other
 * SQL failure is a bug, logged here with its cause and answered as INTERNAL without details.
 */
export const sqlFailure = (error: SqlError.SqlError): Effect.Effect<never, IamError> => {
  if (isUnavailable(error)) {
    return Effect.zipRight(Effect.logWarning("iam: database unavailable", { sqlstate: sqlState(error) }), Effect.fail(IamError.unavailable()))
  }
  return Effect.zipRight(Effect.logError("iam: unexpected database error", error), Effect.fail(IamError.internal()))
}

export const catchSql = <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, SqlError.SqlError> | IamError, R> =>
  Effect.catchIf(
    self,
    (e): e is E & SqlError.SqlError => (e as { _tag?: unknown } | undefined)?._tag === "SqlError",
    (e) => sqlFailure(e)
  ) as Effect.Effect<A, Exclude<E, SqlError.SqlError> | IamError, R>

export { constraintOf, sqlState } from "../platform/sql/SqlErrors.js"
