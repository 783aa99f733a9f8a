import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { PasswordHasher } from "../../platform/PasswordHasher.js"
import { RolesRepo } from "../store/RolesRepo.js"
import { usernameKey } from "../domain/AccountRules.js"
import { IamError } from "../domain/IamError.js"
import { AccountsRepo, type UserRow } from "../store/AccountsRepo.js"
import { LoginThrottle } from "./LoginThrottle.js"
import { traced } from "../../platform/Traced.js"

/** A user as the service hands it out: never with its password hash. */
export interface Account {
  readonly id: number
  readonly username: string
  readonly email: string
  readonly createdAt: Date
  readonly updatedAt: Date
}

const toAccount = (row: UserRow): Account => ({
  id: row.id,
  username: row.username,
  email: row.email,
  createdAt: row.createdAt,
  updatedAt: row.updatedAt
})

export type LoginIdentifier = { readonly username: string } | { readonly email: string }

/**
 * What the login throttle counts an attempt against: the account when one answers to the identifier (so its
 * username and its email share one count), else the name itself, so that names no account has are throttled
 * exactly as names that one has, and the throttle tells a guesser nothing about which exist.
 */
export const throttledAs = (identifier: LoginIdentifier, row: UserRow | undefined): string =>
  row !== undefined ? `user:${row.id}`
  : "username" in identifier ? `username:${usernameKey(identifier.username)}`
  : `email:${identifier.email}`

/**
 * Accounts: registration and password sign-in, behind the login throttle. Inputs arrive already checked by
 * domain/AccountRules.
 */
export class Accounts extends Context.Tag("iam/Accounts")<Accounts, {
  /** ALREADY_EXISTS when the username or email is taken (without saying which: it would confirm an account). */
  readonly register: (input: {
    readonly username: string
    readonly email: string
    readonly password: Redacted.Redacted<string>
  }) => Effect.Effect<Account, IamError>
  /**
   * UNAUTHENTICATED for an unknown account or a wrong password alike, after the same bcrypt work.
   * RESOURCE_EXHAUSTED, before any bcrypt work, while the login throttle holds the account or `client` back.
   */
  readonly login: (
    identifier: LoginIdentifier,
    password: Redacted.Redacted<string>,
    client?: string | undefined
  ) => Effect.Effect<Account, IamError>
  readonly find: (id: number) => Effect.Effect<Account | undefined, IamError>
  /** The account registered with `email` (lower-cased, as stored), if any: for a sign-in that vouched for the email. */
  readonly findByEmail: (email: string) => Effect.Effect<Account | undefined, IamError>
  readonly roleNames: (id: number) => Effect.Effect<ReadonlyArray<string>, IamError>
}>() {
  static readonly layer: Layer.Layer<Accounts, never, AccountsRepo | RolesRepo | PasswordHasher | LoginThrottle> = Layer.effect(
    Accounts,
    Effect.gen(function*() {
      const repo = yield* AccountsRepo
      const roles = yield* RolesRepo
      const hasher = yield* PasswordHasher
      const throttle = yield* LoginThrottle

      const register = traced("Accounts.register")(function*(input: {
        readonly username: string
        readonly email: string
        readonly password: Redacted.Redacted<string>
      }) {
        // Hashing happens before any query: bcrypt must never run inside a transaction (PGlite serialises them).
        const passwordHash = yield* hasher.hash(input.password)
        return toAccount(yield* repo.insert({ username: input.username, email: input.email, passwordHash }))
      })

      const login = traced("Accounts.login")(function*(
        identifier: LoginIdentifier,
        password: Redacted.Redacted<string>,
        client?: string | undefined
      ) {
        const row = "username" in identifier
          ? yield* repo.findByUsername(identifier.username)
          : yield* repo.findByEmail(identifier.email)
        const attempt = { client, account: throttledAs(identifier, row) }
        yield* throttle.admit(attempt)
        const ok = yield* hasher.verifyOrBurn(password, row?.passwordHash)
        if (row === undefined || !ok) return yield* IamError.unauthenticated("invalid credentials")
        yield* throttle.succeeded(attempt)
        return toAccount(row)
      })

      const find = traced("Accounts.find")(function*(id: number) {
        const row = yield* repo.findById(id)
        return row === undefined ? undefined : toAccount(row)
      })

      const findByEmail = traced("Accounts.findByEmail")(function*(email: string) {
        const row = yield* repo.findByEmail(email)
        return row === undefined ? undefined : toAccount(row)
      })

      const roleNames = traced("Accounts.roleNames")(function*(id: number) {
        return yield* roles.roleNamesOf(id)
      })

      return { register, login, find, findByEmail, roleNames }
    })
  )
}
