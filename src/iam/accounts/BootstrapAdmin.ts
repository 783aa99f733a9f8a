import { SqlClient } from "@effect/sql"
import { Effect, Either, Redacted } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { Roles } from "../access/Roles.js"
import { checkRegistration } from "../domain/AccountRules.js"
import { IamError } from "../domain/IamError.js"
import { catchSql, IamSql } from "../IamSql.js"
import { Accounts } from "./Accounts.js"

export interface BootstrapResult {
  readonly userId: number
  readonly created: boolean
}

/**
 * Makes sure the first administrator exists: creates the admin role (AUTH_IAM_ADMIN_ROLE) if missing, creates
 * the account if no account has that username, and assigns the role. Running it again changes nothing; an
 * existing account keeps its password.
 */
export const bootstrapAdmin = Effect.fn("IamBootstrap.bootstrapAdmin")(function*(input: {
  readonly username: string
  readonly email: string
  readonly password: Redacted.Redacted<string>
}) {
  const registration = checkRegistration({ ...input, password: Redacted.value(input.password) })
  if (Either.isLeft(registration)) return yield* registration.left
  const { iam } = yield* AppConfig
  const sql = yield* SqlClient.SqlClient
  const { table } = yield* IamSql
  const accounts = yield* Accounts
  const roles = yield* Roles

  const existing = yield* catchSql(sql<{ id: number }>`SELECT id FROM ${sql(table.users)} WHERE username = ${registration.right.username}`)
  const userId = existing[0]?.id ?? (yield* accounts.register({ ...registration.right, password: input.password })).id
  const role = yield* catchSql(Effect.zipRight(
    sql`INSERT INTO ${sql(table.roles)} ${sql.insert({ name: iam.adminRole, description: "Administrators: every action on every resource" })}
      ON CONFLICT (name) DO NOTHING`,
    sql<{ id: number }>`SELECT id FROM ${sql(table.roles)} WHERE name = ${iam.adminRole}`
  ))
  if (role[0] === undefined) return yield* IamError.internal()
  yield* roles.assign(userId, role[0].id)
  return { userId, created: existing.length === 0 } satisfies BootstrapResult
})
