import { SqlClient, type SqlError } from "@effect/sql"
import { Context, Effect, Layer, Redacted } from "effect"
import { PasswordHasher } from "../../platform/PasswordHasher.js"
import { IamError } from "../domain/IamError.js"
import { catchSql, constraintOf, IamSql, sqlState } from "../IamSql.js"

/** A user as the service hands it out: never with its password hash. */
export interface Account {
  readonly id: number
  readonly username: string
  readonly email: string
  readonly createdAt: Date
  readonly updatedAt: Date
}

interface Row {
  readonly id: number
  readonly username: string
  readonly email: string
  readonly password_hash: string
  readonly created_at: Date
  readonly updated_at: Date
}

const toAccount = (row: Row): Account => ({
  id: row.id,
  username: row.username,
  email: row.email,
  createdAt: new Date(row.created_at),
  updatedAt: new Date(row.updated_at)
})

// The database's own checks back up domain/AccountRules; a race on a unique name lands here.
const registerFailure = (error: SqlError.SqlError): SqlError.SqlError | IamError =>
  sqlState(error) === "23505"
    ? IamError.exists("username or email is already registered")
    : sqlState(error) === "23514" && constraintOf(error).includes("email")
    ? IamError.invalid("email must be an address containing @")
    : error

export type LoginIdentifier = { readonly username: string } | { readonly email: string }

/** Accounts: registration and password sign-in. Inputs arrive already checked by domain/AccountRules. */
export class Accounts extends Context.Tag("iam/Accounts")<Accounts, {
  /** ALREADY_EXISTS when the username or email is taken (without saying which: it would confirm an account). */
  readonly register: (input: {
    readonly username: string
    readonly email: string
    readonly password: Redacted.Redacted<string>
  }) => Effect.Effect<Account, IamError>
  /** UNAUTHENTICATED for an unknown account or a wrong password alike, after the same bcrypt work. */
  readonly login: (identifier: LoginIdentifier, password: Redacted.Redacted<string>) => Effect.Effect<Account, IamError>
  readonly find: (id: number) => Effect.Effect<Account | undefined, IamError>
  readonly roleNames: (id: number) => Effect.Effect<ReadonlyArray<string>, IamError>
}>() {
  static readonly layer: Layer.Layer<Accounts, never, SqlClient.SqlClient | IamSql | PasswordHasher> = Layer.effect(
    Accounts,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { table } = yield* IamSql
      const hasher = yield* PasswordHasher

      const register = Effect.fn("Accounts.register")(function*(input: {
        readonly username: string
        readonly email: string
        readonly password: Redacted.Redacted<string>
      }) {
        // Hashing happens before any query: bcrypt must never run inside a transaction (PGlite serialises them).
        const passwordHash = yield* hasher.hash(input.password)
        const rows = yield* sql<Row>`
          INSERT INTO ${sql(table.users)} ${sql.insert({ username: input.username, email: input.email, password_hash: passwordHash })}
          RETURNING *`.pipe(
          Effect.mapError(registerFailure)
        )
        return toAccount(rows[0]!)
      }, (effect) => catchSql(effect))

      const login = Effect.fn("Accounts.login")(function*(identifier: LoginIdentifier, password: Redacted.Redacted<string>) {
        const rows = "username" in identifier
          ? yield* sql<Row>`SELECT * FROM ${sql(table.users)} WHERE username = ${identifier.username}`
          : yield* sql<Row>`SELECT * FROM ${sql(table.users)} WHERE email = ${identifier.email}`
        const row = rows[0]
        const ok = yield* hasher.verifyOrBurn(password, row?.password_hash)
        if (row === undefined || !ok) return yield* IamError.unauthenticated("invalid credentials")
        return toAccount(row)
      }, (effect) => catchSql(effect))

      const find = Effect.fn("Accounts.find")(function*(id: number) {
        const rows = yield* sql<Row>`SELECT * FROM ${sql(table.users)} WHERE id = ${id}`
        return rows[0] === undefined ? undefined : toAccount(rows[0])
      }, (effect) => catchSql(effect))

      const roleNames = Effect.fn("Accounts.roleNames")(function*(id: number) {
        const rows = yield* sql<{ name: string }>`
          SELECT r.name FROM ${sql(table.user_roles)} ur JOIN ${sql(table.roles)} r ON r.id = ur.role_id
          WHERE ur.user_id = ${id} ORDER BY r.name`
        return rows.map((r) => r.name)
      }, (effect) => catchSql(effect))

      return { register, login, find, roleNames }
    })
  )
}
