import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import { IamConfig } from "../config/IamConfig.js"
import { OPERATOR } from "./access/Authority.js"
import { Roles } from "./access/Roles.js"
import { RolesRepo } from "./store/RolesRepo.js"
import { checkRegistration } from "./domain/AccountRules.js"
import { Accounts } from "./accounts/Accounts.js"
import { AccountsRepo } from "./store/AccountsRepo.js"
import { traced } from "../platform/Traced.js"

export interface BootstrapResult {
  readonly userId: number
  readonly created: boolean
}

/**
 * Makes sure the first administrator exists: creates the admin role (AUTH_IAM_ADMIN_ROLE) if missing, creates
 * the account if no account has that username, and assigns the role. Running it again changes nothing; an
 * existing account keeps its password.
 */
export const bootstrapAdmin = traced("IamBootstrap.bootstrapAdmin")(function*(input: {
  readonly username: string
  readonly email: string
  readonly password: Redacted.Redacted<string>
}) {
  const registration = checkRegistration({ ...input, password: Redacted.value(input.password) })
  if (Either.isLeft(registration)) return yield* registration.left
  const iam = yield* IamConfig
  const accountsRepo = yield* AccountsRepo
  const rolesRepo = yield* RolesRepo
  const accounts = yield* Accounts
  const roles = yield* Roles

  const existing = yield* accountsRepo.findByUsername(registration.right.username)
  const userId = existing?.id ?? (yield* accounts.register({ ...registration.right, password: input.password })).id
  const roleId = yield* rolesRepo.ensureRole(iam.adminRole, "Administrators: every action on every resource")
  yield* roles.assign(OPERATOR, userId, roleId)
  return { userId, created: existing === undefined } satisfies BootstrapResult
})
