import { SqlClient, type SqlError } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import { tablePrefix } from "../platform/Migrator.js"
import { IamError } from "./domain/IamError.js"

const TABLES = ["users", "roles", "permissions", "user_roles", "role_permissions", "refresh_tokens", "revocations",
  "policy_version"] as const
export type IamTable = (typeof TABLES)[number]

/** The IAM tables' qualified names (schema `iam`, DB_NAMESPACE prefix) and its notification channels. */
export class IamSql extends Context.Tag("iam/IamSql")<IamSql, {
  readonly table: Readonly<Record<IamTable, string>>
  readonly channel: { readonly policy: string; readonly revocations: string }
  /**
   * Whether LISTEN may be used. Not on the embedded PGlite: its socket server is one session, and a LISTEN
   * there stalls every other query. It needs none anyway: the data-directory lock allows one process only.
   */
  readonly listenSupported: boolean
}>() {
  static readonly layer: Layer.Layer<IamSql, never, AppConfig | SqlClient.SqlClient> = Layer.effect(
    IamSql,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const sql = yield* SqlClient.SqlClient
      const version = yield* sql<{ version: string }>`SELECT version()`.pipe(
        Effect.map((rows) => rows[0]?.version ?? ""),
        Effect.orElseSucceed(() => "PGlite")
      )
      const prefix = tablePrefix(config.db.namespace)
      return {
        table: Object.fromEntries(TABLES.map((t) => [t, `iam.${prefix}${t}`])) as Record<IamTable, string>,
        channel: { policy: `${prefix}iam_policy`, revocations: `${prefix}iam_revocations` },
        listenSupported: !version.includes("PGlite")
      }
    })
  )
}

// SQLSTATE classes that mean "the database is not there right now", and the driver's socket errors.
const UNAVAILABLE_STATES = /^(08|53|57P)/
const UNAVAILABLE_ERRNO = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND"])

export const sqlState = (error: SqlError.SqlError): string | undefined => {
  const code = (error.cause as { code?: unknown } | undefined)?.code
  return typeof code === "string" ? code : undefined
}

export const constraintOf = (error: SqlError.SqlError): string =>
  String((error.cause as { constraint?: unknown } | undefined)?.constraint ?? "")

/**
 * The repo boundary: a database that cannot be reached is UNAVAILABLE (the client may retry); any other
 * SQL failure is a bug, logged here with its cause and answered as INTERNAL without details.
 */
export const sqlFailure = (error: SqlError.SqlError): Effect.Effect<never, IamError> => {
  const state = sqlState(error)
  if (state !== undefined && (UNAVAILABLE_STATES.test(state) || UNAVAILABLE_ERRNO.has(state))) {
    return Effect.zipRight(Effect.logWarning("iam: database unavailable", { sqlstate: state }), Effect.fail(IamError.unavailable()))
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

export { SqlClient }
