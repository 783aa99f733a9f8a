import * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import { usernameKey } from "../domain/AccountRules.js"
import { IamError } from "../domain/IamError.js"
import { catchSql, constraintOf, IamSql, sqlState } from "../IamSql.js"

/** A row of the users table, password hash included: only Accounts sees it, and never hands it out. */
export interface UserRow {
  readonly id: number
  readonly username: string
  readonly email: string
  readonly passwordHash: string
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

const toUser = (row: Row): UserRow => ({
  id: row.id,
  username: row.username,
  email: row.email,
  passwordHash: row.password_hash,
  createdAt: new Date(row.created_at),
  updatedAt: new Date(row.updated_at)
})

export const TAKEN = "username or email is already registered"
export const EMAIL_WITHOUT_AT = "email must be an address containing @"

// The database's own checks back up domain/AccountRules; a race on a unique name lands here.
const insertFailure = (error: SqlError.SqlError): SqlError.SqlError | IamError =>
  sqlState(error) === "23505"
    ? IamError.exists(TAKEN)
    : sqlState(error) === "23514" && constraintOf(error).includes("email")
    ? IamError.invalid(EMAIL_WITHOUT_AT)
    : error

export interface NewUser {
  readonly username: string
  readonly email: string
  readonly passwordHash: string
}

/**
 * The users table. Failures are IamError already: SQL errors are mapped here, at the repo boundary. Usernames are
 * found and kept unique whatever their case; each is stored as it was registered.
 */
export class AccountsRepo extends Effect.Service<AccountsRepo>()("iam/AccountsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { table } = yield* IamSql

    const insert = (user: NewUser): Effect.Effect<UserRow, IamError> =>
      sql<Row>`INSERT INTO ${sql(table.users)} ${sql.insert({ username: user.username, email: user.email, password_hash: user.passwordHash })}
        RETURNING *`.pipe(
        Effect.mapError(insertFailure),
        Effect.map((rows) => toUser(rows[0]!)),
        catchSql
      )

    // lower(username) on both sides: the expression of the unique index, so the index answers it.
    const findByUsername = (username: string): Effect.Effect<UserRow | undefined, IamError> =>
      sql<Row>`SELECT * FROM ${sql(table.users)} WHERE lower(username) = lower(${username})`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toUser(rows[0])),
        catchSql
      )

    const findByEmail = (email: string): Effect.Effect<UserRow | undefined, IamError> =>
      sql<Row>`SELECT * FROM ${sql(table.users)} WHERE email = ${email}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toUser(rows[0])),
        catchSql
      )

    const findById = (id: number): Effect.Effect<UserRow | undefined, IamError> =>
      sql<Row>`SELECT * FROM ${sql(table.users)} WHERE id = ${id}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toUser(rows[0])),
        catchSql
      )

    return { insert, findByUsername, findByEmail, findById }
  })
}) {
  /**
   * In memory, with the table's rules: ids from a counter that, like the serial, is spent by a failed insert
   * too; usernames unique and found whatever their case (usernameKey, as the lower(username) index); emails
   * unique, compared exactly (they arrive lower-cased); an email without '@' refused as by its CHECK.
   */
  static readonly Test: Layer.Layer<AccountsRepo> = Layer.effect(
    AccountsRepo,
    Effect.gen(function*() {
      type State = { readonly rows: ReadonlyArray<UserRow>; readonly lastId: number }
      const state = yield* Ref.make<State>({ rows: [], lastId: 0 })
      const find = (matches: (user: UserRow) => boolean) => Effect.map(Ref.get(state), ({ rows }) => rows.find(matches))

      const insert = (user: NewUser): Effect.Effect<UserRow, IamError> =>
        Effect.flatMap(Clock.currentTimeMillis, (millis) =>
          Ref.modify(state, ({ lastId, rows }): readonly [Effect.Effect<UserRow, IamError>, State] => {
            const id = lastId + 1
            const failure = !user.email.includes("@") ? IamError.invalid(EMAIL_WITHOUT_AT)
              : rows.some((u) => usernameKey(u.username) === usernameKey(user.username) || u.email === user.email)
              ? IamError.exists(TAKEN)
              : undefined
            if (failure !== undefined) return [Effect.fail(failure), { rows, lastId: id }]
            const row: UserRow = { ...user, id, createdAt: new Date(millis), updatedAt: new Date(millis) }
            return [Effect.succeed(row), { rows: [...rows, row], lastId: id }]
          })).pipe(Effect.flatten)

      return AccountsRepo.make({
        insert,
        findByUsername: (username) => find((u) => usernameKey(u.username) === usernameKey(username)),
        findByEmail: (email) => find((u) => u.email === email),
        findById: (id) => find((u) => u.id === id)
      })
    })
  )
}
