import { Context, Effect, Layer } from "effect"
import { Transactions } from "../../platform/sql/Transactions.js"
import { IamError } from "../domain/IamError.js"
import type { Action, Resource } from "../domain/ResourceAction.js"
import { catchSql } from "../IamSql.js"
import { IamPolicy } from "./IamPolicy.js"
import { type NewPermission, type PermissionRecord, type RoleRecord, RolesRepo } from "./RolesRepo.js"

export type { PermissionRecord, RoleRecord } from "./RolesRepo.js"

/**
 * Roles, permissions and the links between them and users. Every change runs in one transaction with the
 * policy-version bump, then reloads this instance's policy, so the caller's next CheckPermission sees it.
 * Linking an existing pair and unlinking a missing one succeed: both leave the state the caller asked for.
 */
export class Roles extends Context.Tag("iam/Roles")<Roles, {
  readonly createRole: (name: string, description: string | null) => Effect.Effect<RoleRecord, IamError>
  readonly listRoles: Effect.Effect<ReadonlyArray<RoleRecord>, IamError>
  readonly deleteRole: (id: number) => Effect.Effect<void, IamError>
  readonly assign: (userId: number, roleId: number) => Effect.Effect<void, IamError>
  readonly unassign: (userId: number, roleId: number) => Effect.Effect<void, IamError>
  readonly rolesOf: (userId: number) => Effect.Effect<ReadonlyArray<RoleRecord>, IamError>
  readonly createPermission: (input: {
    readonly name: string
    readonly description: string | null
    readonly resource: Resource
    readonly action: Action
  }) => Effect.Effect<PermissionRecord, IamError>
  readonly listPermissions: Effect.Effect<ReadonlyArray<PermissionRecord>, IamError>
  readonly deletePermission: (id: number) => Effect.Effect<void, IamError>
  readonly grant: (roleId: number, permissionId: number) => Effect.Effect<void, IamError>
  readonly revoke: (roleId: number, permissionId: number) => Effect.Effect<void, IamError>
  readonly permissionsOf: (roleId: number) => Effect.Effect<ReadonlyArray<PermissionRecord>, IamError>
}>() {
  static readonly layer: Layer.Layer<Roles, never, RolesRepo | Transactions | IamPolicy> = Layer.effect(
    Roles,
    Effect.gen(function*() {
      const repo = yield* RolesRepo
      const transactions = yield* Transactions
      const policy = yield* IamPolicy

      // The transaction's own failures (begin, commit) are SQL errors the repos never see; they map the same way.
      const changing = <A>(change: Effect.Effect<A, IamError>): Effect.Effect<A, IamError> =>
        catchSql(transactions.run(Effect.tap(change, () => policy.changed))).pipe(Effect.tap(() => policy.reload))

      const createRole = Effect.fn("Roles.createRole")(function*(name: string, description: string | null) {
        return yield* repo.createRole(name, description)
      })

      const listRoles = repo.listRoles.pipe(Effect.withSpan("Roles.listRoles"))

      const deleteRole = Effect.fn("Roles.deleteRole")(function*(id: number) {
        if (!(yield* changing(repo.deleteRole(id)))) return yield* IamError.notFound("role not found")
      })

      const assign = Effect.fn("Roles.assign")(function*(userId: number, roleId: number) {
        yield* changing(repo.assign(userId, roleId))
      })

      const unassign = Effect.fn("Roles.unassign")(function*(userId: number, roleId: number) {
        yield* changing(repo.unassign(userId, roleId))
      })

      const rolesOf = Effect.fn("Roles.rolesOf")(function*(userId: number) {
        if (!(yield* repo.userExists(userId))) return yield* IamError.notFound("user not found")
        return yield* repo.rolesOf(userId)
      })

      const createPermission = Effect.fn("Roles.createPermission")(function*(input: NewPermission) {
        return yield* repo.createPermission(input)
      })

      const listPermissions = repo.listPermissions.pipe(Effect.withSpan("Roles.listPermissions"))

      const deletePermission = Effect.fn("Roles.deletePermission")(function*(id: number) {
        if (!(yield* changing(repo.deletePermission(id)))) return yield* IamError.notFound("permission not found")
      })

      const grant = Effect.fn("Roles.grant")(function*(roleId: number, permissionId: number) {
        yield* changing(repo.grant(roleId, permissionId))
      })

      const revoke = Effect.fn("Roles.revoke")(function*(roleId: number, permissionId: number) {
        yield* changing(repo.revoke(roleId, permissionId))
      })

      const permissionsOf = Effect.fn("Roles.permissionsOf")(function*(roleId: number) {
        if (!(yield* repo.roleExists(roleId))) return yield* IamError.notFound("role not found")
        return yield* repo.permissionsOf(roleId)
      })

      return {
        createRole, listRoles, deleteRole, assign, unassign, rolesOf,
        createPermission, listPermissions, deletePermission, grant, revoke, permissionsOf
      }
    })
  )
}
