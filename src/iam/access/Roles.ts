import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { IamConfig } from "../../config/IamConfig.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { IamError } from "../domain/IamError.js"
import { leavesNoAdmin } from "../domain/LastAdmin.js"
import type { Action, Resource } from "../domain/ResourceAction.js"
import { catchSql } from "../IamSql.js"
import { type Actor, Authority } from "./Authority.js"
import { IamPolicy } from "./IamPolicy.js"
import { type NewPermission, type PermissionRecord, type RoleRecord, RolesRepo } from "../store/RolesRepo.js"
import { traced } from "../../platform/Traced.js"

export type { PermissionRecord, RoleRecord } from "../store/RolesRepo.js"

export const LAST_ADMIN = "the last holder of the admin role cannot be removed: assign the role to someone else first"

/**
 * Roles, permissions and the links between them and users. Every change runs in one transaction with the
 * policy-version bump, then reloads this instance's policy, so the caller's next CheckPermission sees it.
 * Linking an existing pair and unlinking a missing one succeed: both leave the state the caller asked for.
 *
 * Every change of a link, and every deletion, is made by an Actor and held to the delegation rule
 * (Authority): a role moves only by its holders, a permission only by those the policy allows its resource and
 * action, anything by an admin. No change may leave the admin role (AUTH_IAM_ADMIN_ROLE) without a holder.
 */
export class Roles extends Context.Tag("iam/Roles")<Roles, {
  readonly createRole: (name: string, description: string | null) => Effect.Effect<RoleRecord, IamError>
  readonly listRoles: Effect.Effect<ReadonlyArray<RoleRecord>, IamError>
  readonly deleteRole: (by: Actor, id: number) => Effect.Effect<void, IamError>
  readonly assign: (by: Actor, userId: number, roleId: number) => Effect.Effect<void, IamError>
  readonly unassign: (by: Actor, userId: number, roleId: number) => Effect.Effect<void, IamError>
  readonly rolesOf: (userId: number) => Effect.Effect<ReadonlyArray<RoleRecord>, IamError>
  readonly createPermission: (input: {
    readonly name: string
    readonly description: string | null
    readonly resource: Resource
    readonly action: Action
  }) => Effect.Effect<PermissionRecord, IamError>
  readonly listPermissions: Effect.Effect<ReadonlyArray<PermissionRecord>, IamError>
  readonly deletePermission: (by: Actor, id: number) => Effect.Effect<void, IamError>
  readonly grant: (by: Actor, roleId: number, permissionId: number) => Effect.Effect<void, IamError>
  readonly revoke: (by: Actor, roleId: number, permissionId: number) => Effect.Effect<void, IamError>
  readonly permissionsOf: (roleId: number) => Effect.Effect<ReadonlyArray<PermissionRecord>, IamError>
}>() {
  static readonly layer: Layer.Layer<Roles, never, RolesRepo | Transactions | IamPolicy | Authority | IamConfig> = Layer.effect(
    Roles,
    Effect.gen(function*() {
      const repo = yield* RolesRepo
      const transactions = yield* Transactions
      const policy = yield* IamPolicy
      const authority = yield* Authority
      const iam = yield* IamConfig

      // The transaction's own failures (begin, commit) are SQL errors the repos never see; they map the same way.
      const changing = <A>(change: Effect.Effect<A, IamError>): Effect.Effect<A, IamError> =>
        catchSql(transactions.run(Effect.tap(change, () => policy.changed))).pipe(Effect.tap(() => policy.reload))

      const createRole = traced("Roles.createRole")(function*(name: string, description: string | null) {
        return yield* repo.createRole(name, description)
      })

      const listRoles = repo.listRoles.pipe(Effect.withSpan("Roles.listRoles"))

      const mayMoveRole = (by: Actor, roleId: number, deed: string) =>
        authority.require(by, { _tag: "Role", roleId }, deed)

      const mayMovePermission = Effect.fnUntraced(function*(by: Actor, permissionId: number, deed: string) {
        const permission = yield* repo.findPermission(permissionId)
        yield* authority.require(by, { _tag: "Permission", permissionId, capability: permission }, deed)
      })

      /**
       * Locks role `roleId` for the rest of the transaction and refuses to take it away from `removed` (undefined:
       * from every holder, as deleting it does) when that would leave the admin role without a holder. Two such
       * changes of one role thus run one after the other, on any instance, and the second counts the holders the
       * first left. Whether the role exists.
       */
      const lockKeepingAnAdmin = Effect.fnUntraced(function*(roleId: number, removed: number | undefined) {
        const name = yield* repo.lockRole(roleId)
        if (name !== iam.adminRole) return name !== undefined
        const holders = yield* repo.holdersOf(roleId)
        if (leavesNoAdmin(holders, removed === undefined ? holders : [removed])) return yield* IamError.precondition(LAST_ADMIN)
        return true
      })

      const deleteRole = traced("Roles.deleteRole")(function*(by: Actor, id: number) {
        yield* mayMoveRole(by, id, "delete it")
        const deleted = yield* changing(Effect.flatMap(lockKeepingAnAdmin(id, undefined), (exists) =>
          exists ? repo.deleteRole(id) : Effect.succeed(false)))
        if (!deleted) return yield* IamError.notFound("role not found")
      })

      const assign = traced("Roles.assign")(function*(by: Actor, userId: number, roleId: number) {
        yield* mayMoveRole(by, roleId, "assign it")
        yield* changing(repo.assign(userId, roleId))
      })

      const unassign = traced("Roles.unassign")(function*(by: Actor, userId: number, roleId: number) {
        yield* mayMoveRole(by, roleId, "remove it")
        yield* changing(Effect.zipRight(lockKeepingAnAdmin(roleId, userId), repo.unassign(userId, roleId)))
      })

      const rolesOf = traced("Roles.rolesOf")(function*(userId: number) {
        if (!(yield* repo.userExists(userId))) return yield* IamError.notFound("user not found")
        return yield* repo.rolesOf(userId)
      })

      const createPermission = traced("Roles.createPermission")(function*(input: NewPermission) {
        return yield* repo.createPermission(input)
      })

      const listPermissions = repo.listPermissions.pipe(Effect.withSpan("Roles.listPermissions"))

      const deletePermission = traced("Roles.deletePermission")(function*(by: Actor, id: number) {
        yield* mayMovePermission(by, id, "delete it")
        if (!(yield* changing(repo.deletePermission(id)))) return yield* IamError.notFound("permission not found")
      })

      const grant = traced("Roles.grant")(function*(by: Actor, roleId: number, permissionId: number) {
        yield* mayMovePermission(by, permissionId, "grant it")
        yield* changing(repo.grant(roleId, permissionId))
      })

      const revoke = traced("Roles.revoke")(function*(by: Actor, roleId: number, permissionId: number) {
        yield* mayMovePermission(by, permissionId, "revoke it")
        yield* changing(repo.revoke(roleId, permissionId))
      })

      const permissionsOf = traced("Roles.permissionsOf")(function*(roleId: number) {
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
