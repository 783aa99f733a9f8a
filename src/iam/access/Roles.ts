import { SqlClient, type SqlError } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { IamError } from "../domain/IamError.js"
import type { Action, Resource } from "../domain/ResourceAction.js"
import { catchSql, IamSql, sqlState } from "../IamSql.js"
import { IamPolicy } from "./IamPolicy.js"

export interface RoleRecord {
  readonly id: number
  readonly name: string
  readonly description: string | null
  readonly createdAt: Date
  readonly updatedAt: Date
}

export interface PermissionRecord extends Omit<RoleRecord, never> {
  readonly resource: Resource
  readonly action: Action
}

interface RoleRow {
  readonly id: number
  readonly name: string
  readonly description: string | null
  readonly created_at: Date
  readonly updated_at: Date
}
interface PermissionRow extends RoleRow {
  readonly resource: Resource
  readonly action: Action
}

const toRole = (row: RoleRow): RoleRecord => ({
  id: row.id,
  name: row.name,
  description: row.description,
  createdAt: new Date(row.created_at),
  updatedAt: new Date(row.updated_at)
})
const toPermission = (row: PermissionRow): PermissionRecord => ({ ...toRole(row), resource: row.resource, action: row.action })

const conflict = (what: string) => (error: SqlError.SqlError): SqlError.SqlError | IamError =>
  sqlState(error) === "23505" ? IamError.exists(`${what} already exists`)
  : sqlState(error) === "23503" ? IamError.notFound(`${what} refers to a record that does not exist`)
  : error

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
  static readonly layer: Layer.Layer<Roles, never, SqlClient.SqlClient | IamSql | IamPolicy> = Layer.effect(
    Roles,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { table } = yield* IamSql
      const policy = yield* IamPolicy

      const changing = <A, E>(change: Effect.Effect<A, E>): Effect.Effect<A, Exclude<E, SqlError.SqlError> | IamError> =>
        catchSql(sql.withTransaction(Effect.tap(change, () => policy.changed))).pipe(Effect.tap(() => policy.reload))

      const exists = (tableName: string, id: number) =>
        Effect.map(sql<{ id: number }>`SELECT id FROM ${sql(tableName)} WHERE id = ${id}`, (rows) => rows.length > 0)

      const createRole = Effect.fn("Roles.createRole")(function*(name: string, description: string | null) {
        const rows = yield* sql<RoleRow>`INSERT INTO ${sql(table.roles)} ${sql.insert({ name, description })} RETURNING *`.pipe(
          Effect.mapError(conflict("a role with this name")),
          (effect) => catchSql(effect)
        )
        return toRole(rows[0]!)
      })

      const listRoles = catchSql(sql<RoleRow>`SELECT * FROM ${sql(table.roles)} ORDER BY id`).pipe(
        Effect.map((rows) => rows.map(toRole)),
        Effect.withSpan("Roles.listRoles")
      )

      const deleteRole = Effect.fn("Roles.deleteRole")(function*(id: number) {
        const deleted = yield* changing(sql`DELETE FROM ${sql(table.roles)} WHERE id = ${id} RETURNING id`)
        if (deleted.length === 0) return yield* IamError.notFound("role not found")
      })

      const assign = Effect.fn("Roles.assign")(function*(userId: number, roleId: number) {
        yield* changing(sql`INSERT INTO ${sql(table.user_roles)} ${sql.insert({ user_id: userId, role_id: roleId })}
          ON CONFLICT DO NOTHING`.pipe(Effect.mapError(conflict("the assignment"))))
      })

      const unassign = Effect.fn("Roles.unassign")(function*(userId: number, roleId: number) {
        yield* changing(sql`DELETE FROM ${sql(table.user_roles)} WHERE user_id = ${userId} AND role_id = ${roleId}`)
      })

      const rolesOf = Effect.fn("Roles.rolesOf")(function*(userId: number) {
        if (!(yield* catchSql(exists(table.users, userId)))) return yield* IamError.notFound("user not found")
        const rows = yield* catchSql(sql<RoleRow>`SELECT r.* FROM ${sql(table.roles)} r
          JOIN ${sql(table.user_roles)} ur ON ur.role_id = r.id WHERE ur.user_id = ${userId} ORDER BY r.id`)
        return rows.map(toRole)
      })

      const createPermission = Effect.fn("Roles.createPermission")(function*(input: {
        readonly name: string
        readonly description: string | null
        readonly resource: Resource
        readonly action: Action
      }) {
        const rows = yield* sql<PermissionRow>`INSERT INTO ${sql(table.permissions)} ${sql.insert({ ...input })}
          RETURNING id, name, description, resource::text AS resource, action::text AS action, created_at, updated_at`.pipe(
          Effect.mapError(conflict("a permission with this name")),
          (effect) => catchSql(effect)
        )
        return toPermission(rows[0]!)
      })

      const selectPermissions = sql`SELECT p.id, p.name, p.description, p.resource::text AS resource,
        p.action::text AS action, p.created_at, p.updated_at FROM ${sql(table.permissions)} p`

      const listPermissions = catchSql(sql<PermissionRow>`${selectPermissions} ORDER BY p.id`).pipe(
        Effect.map((rows) => rows.map(toPermission)),
        Effect.withSpan("Roles.listPermissions")
      )

      const deletePermission = Effect.fn("Roles.deletePermission")(function*(id: number) {
        const deleted = yield* changing(sql`DELETE FROM ${sql(table.permissions)} WHERE id = ${id} RETURNING id`)
        if (deleted.length === 0) return yield* IamError.notFound("permission not found")
      })

      const grant = Effect.fn("Roles.grant")(function*(roleId: number, permissionId: number) {
        yield* changing(sql`INSERT INTO ${sql(table.role_permissions)} ${sql.insert({ role_id: roleId, permission_id: permissionId })}
          ON CONFLICT DO NOTHING`.pipe(Effect.mapError(conflict("the grant"))))
      })

      const revoke = Effect.fn("Roles.revoke")(function*(roleId: number, permissionId: number) {
        yield* changing(sql`DELETE FROM ${sql(table.role_permissions)} WHERE role_id = ${roleId} AND permission_id = ${permissionId}`)
      })

      const permissionsOf = Effect.fn("Roles.permissionsOf")(function*(roleId: number) {
        if (!(yield* catchSql(exists(table.roles, roleId)))) return yield* IamError.notFound("role not found")
        const rows = yield* catchSql(sql<PermissionRow>`${selectPermissions}
          JOIN ${sql(table.role_permissions)} rp ON rp.permission_id = p.id WHERE rp.role_id = ${roleId} ORDER BY p.id`)
        return rows.map(toPermission)
      })

      return {
        createRole, listRoles, deleteRole, assign, unassign, rolesOf,
        createPermission, listPermissions, deletePermission, grant, revoke, permissionsOf
      }
    })
  )
}
