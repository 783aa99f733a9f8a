import * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import { AccountsRepo } from "./AccountsRepo.js"
import { IamError } from "../domain/IamError.js"
import type { Action, Resource } from "../domain/ResourceAction.js"
import { catchSql, IamSql, sqlState } from "../IamSql.js"

export interface RoleRecord {
  readonly id: number
  readonly name: string
  readonly description: string | null
  readonly createdAt: Date
  readonly updatedAt: Date
}

export interface PermissionRecord extends RoleRecord {
  readonly resource: Resource
  readonly action: Action
}

export interface NewPermission {
  readonly name: string
  readonly description: string | null
  readonly resource: Resource
  readonly action: Action
}

/** A granted permission as the policy sees it: the role by its name. */
export interface Grant {
  readonly role: string
  readonly resource: Resource
  readonly action: Action
}

export interface Assignment {
  readonly userId: number
  readonly role: string
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

export const ROLE_NAME_TAKEN = "a role with this name already exists"
export const PERMISSION_NAME_TAKEN = "a permission with this name already exists"
export const ASSIGNMENT_DANGLES = "the assignment refers to a record that does not exist"
export const GRANT_DANGLES = "the grant refers to a record that does not exist"

const conflict = (taken: string, dangles: string) => (error: SqlError.SqlError): SqlError.SqlError | IamError =>
  sqlState(error) === "23505" ? IamError.exists(taken)
  : sqlState(error) === "23503" ? IamError.notFound(dangles)
  : error

/**
 * Roles, permissions, their links to users and to each other, and the policy version that changes with them.
 * Failures are IamError already: SQL errors are mapped here, at the repo boundary. Linking an existing pair and
 * unlinking a missing one succeed; linking to a row that does not exist is NOT_FOUND.
 */
export class RolesRepo extends Effect.Service<RolesRepo>()("iam/RolesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { channel, table } = yield* IamSql

    const exists = (tableName: string, id: number): Effect.Effect<boolean, IamError> =>
      Effect.map(sql<{ id: number }>`SELECT id FROM ${sql(tableName)} WHERE id = ${id}`, (rows) => rows.length > 0).pipe(catchSql)

    const createRole = (name: string, description: string | null): Effect.Effect<RoleRecord, IamError> =>
      sql<RoleRow>`INSERT INTO ${sql(table.roles)} ${sql.insert({ name, description })} RETURNING *`.pipe(
        Effect.mapError(conflict(ROLE_NAME_TAKEN, ROLE_NAME_TAKEN)),
        Effect.map((rows) => toRole(rows[0]!)),
        catchSql
      )

    const ensureRole = (name: string, description: string): Effect.Effect<number, IamError> =>
      Effect.zipRight(
        sql`INSERT INTO ${sql(table.roles)} ${sql.insert({ name, description })} ON CONFLICT (name) DO NOTHING`,
        sql<{ id: number }>`SELECT id FROM ${sql(table.roles)} WHERE name = ${name}`
      ).pipe(
        catchSql,
        Effect.flatMap((rows) => rows[0] === undefined ? Effect.fail(IamError.internal()) : Effect.succeed(rows[0].id))
      )

    const listRoles: Effect.Effect<ReadonlyArray<RoleRecord>, IamError> = sql<RoleRow>`SELECT * FROM ${sql(table.roles)} ORDER BY id`.pipe(
      Effect.map((rows) => rows.map(toRole)),
      catchSql
    )

    const deleteRole = (id: number): Effect.Effect<boolean, IamError> =>
      Effect.map(sql`DELETE FROM ${sql(table.roles)} WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0).pipe(catchSql)

    const assign = (userId: number, roleId: number): Effect.Effect<void, IamError> =>
      sql`INSERT INTO ${sql(table.user_roles)} ${sql.insert({ user_id: userId, role_id: roleId })} ON CONFLICT DO NOTHING`.pipe(
        Effect.mapError(conflict(ASSIGNMENT_DANGLES, ASSIGNMENT_DANGLES)),
        Effect.asVoid,
        catchSql
      )

    const unassign = (userId: number, roleId: number): Effect.Effect<void, IamError> =>
      sql`DELETE FROM ${sql(table.user_roles)} WHERE user_id = ${userId} AND role_id = ${roleId}`.pipe(Effect.asVoid, catchSql)

    // NO KEY UPDATE: it queues every other caller of lockRole on this role (and a delete of it) until commit, yet
    // lets assignments to the role, whose foreign-key check only takes KEY SHARE, go on.
    const lockRole = (roleId: number): Effect.Effect<string | undefined, IamError> =>
      sql<{ name: string }>`SELECT name FROM ${sql(table.roles)} WHERE id = ${roleId} FOR NO KEY UPDATE`.pipe(
        Effect.map((rows) => rows[0]?.name),
        catchSql
      )

    const holdersOf = (roleId: number): Effect.Effect<ReadonlyArray<number>, IamError> =>
      sql<{ user_id: number }>`SELECT user_id FROM ${sql(table.user_roles)} WHERE role_id = ${roleId} ORDER BY user_id`.pipe(
        Effect.map((rows) => rows.map((r) => r.user_id)),
        catchSql
      )

    const rolesOf = (userId: number): Effect.Effect<ReadonlyArray<RoleRecord>, IamError> =>
      sql<RoleRow>`SELECT r.* FROM ${sql(table.roles)} r
        JOIN ${sql(table.user_roles)} ur ON ur.role_id = r.id WHERE ur.user_id = ${userId} ORDER BY r.id`.pipe(
        Effect.map((rows) => rows.map(toRole)),
        catchSql
      )

    const roleNamesOf = (userId: number): Effect.Effect<ReadonlyArray<string>, IamError> =>
      sql<{ name: string }>`
        SELECT r.name FROM ${sql(table.user_roles)} ur JOIN ${sql(table.roles)} r ON r.id = ur.role_id
        WHERE ur.user_id = ${userId} ORDER BY r.name`.pipe(
        Effect.map((rows) => rows.map((r) => r.name)),
        catchSql
      )

    const createPermission = (input: NewPermission): Effect.Effect<PermissionRecord, IamError> =>
      sql<PermissionRow>`INSERT INTO ${sql(table.permissions)} ${sql.insert({ ...input })}
        RETURNING id, name, description, resource::text AS resource, action::text AS action, created_at, updated_at`.pipe(
        Effect.mapError(conflict(PERMISSION_NAME_TAKEN, PERMISSION_NAME_TAKEN)),
        Effect.map((rows) => toPermission(rows[0]!)),
        catchSql
      )

    const selectPermissions = sql`SELECT p.id, p.name, p.description, p.resource::text AS resource,
      p.action::text AS action, p.created_at, p.updated_at FROM ${sql(table.permissions)} p`

    const listPermissions: Effect.Effect<ReadonlyArray<PermissionRecord>, IamError> =
      sql<PermissionRow>`${selectPermissions} ORDER BY p.id`.pipe(Effect.map((rows) => rows.map(toPermission)), catchSql)

    const deletePermission = (id: number): Effect.Effect<boolean, IamError> =>
      Effect.map(sql`DELETE FROM ${sql(table.permissions)} WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0).pipe(catchSql)

    const grant = (roleId: number, permissionId: number): Effect.Effect<void, IamError> =>
      sql`INSERT INTO ${sql(table.role_permissions)} ${sql.insert({ role_id: roleId, permission_id: permissionId })}
        ON CONFLICT DO NOTHING`.pipe(Effect.mapError(conflict(GRANT_DANGLES, GRANT_DANGLES)), Effect.asVoid, catchSql)

    const revoke = (roleId: number, permissionId: number): Effect.Effect<void, IamError> =>
      sql`DELETE FROM ${sql(table.role_permissions)} WHERE role_id = ${roleId} AND permission_id = ${permissionId}`.pipe(
        Effect.asVoid,
        catchSql
      )

    const findPermission = (id: number): Effect.Effect<PermissionRecord | undefined, IamError> =>
      sql<PermissionRow>`${selectPermissions} WHERE p.id = ${id}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toPermission(rows[0])),
        catchSql
      )

    const permissionsOf = (roleId: number): Effect.Effect<ReadonlyArray<PermissionRecord>, IamError> =>
      sql<PermissionRow>`${selectPermissions}
        JOIN ${sql(table.role_permissions)} rp ON rp.permission_id = p.id WHERE rp.role_id = ${roleId} ORDER BY p.id`.pipe(
        Effect.map((rows) => rows.map(toPermission)),
        catchSql
      )

    const grants: Effect.Effect<ReadonlyArray<Grant>, IamError> = sql<Grant>`
      SELECT r.name AS role, p.resource::text AS resource, p.action::text AS action
      FROM ${sql(table.role_permissions)} rp
      JOIN ${sql(table.roles)} r ON r.id = rp.role_id
      JOIN ${sql(table.permissions)} p ON p.id = rp.permission_id`.pipe(catchSql)

    const assignments: Effect.Effect<ReadonlyArray<Assignment>, IamError> = sql<{ user_id: number; role: string }>`
      SELECT ur.user_id, r.name AS role FROM ${sql(table.user_roles)} ur JOIN ${sql(table.roles)} r ON r.id = ur.role_id`.pipe(
      Effect.map((rows) => rows.map((a) => ({ userId: a.user_id, role: a.role }))),
      catchSql
    )

    const policyVersion: Effect.Effect<string, IamError> = sql<{ version: string }>`SELECT version FROM ${sql(table.policy_version)}`.pipe(
      Effect.map((rows) => String(rows[0]?.version ?? "0")),
      catchSql
    )

    const bumpPolicyVersion: Effect.Effect<void, IamError> = Effect.gen(function*() {
      const rows = yield* sql<{ version: string }>`
        UPDATE ${sql(table.policy_version)} SET version = version + 1 RETURNING version`
      yield* sql`SELECT pg_notify(${channel.policy}, ${String(rows[0]?.version ?? "")})`
    }).pipe(catchSql)

    return {
      userExists: (userId: number) => exists(table.users, userId),
      roleExists: (roleId: number) => exists(table.roles, roleId),
      createRole, ensureRole, listRoles, deleteRole, assign, unassign, lockRole, holdersOf, rolesOf, roleNamesOf,
      createPermission, listPermissions, findPermission, deletePermission, grant, revoke, permissionsOf,
      grants, assignments, policyVersion, bumpPolicyVersion
    }
  })
}) {
  /**
   * In memory, with the tables' rules: ids from counters that, like the serials, a failed insert spends too;
   * role and permission names unique; a link to a missing user, role or permission is NOT_FOUND (users are
   * AccountsRepo's); deleting a role or permission deletes its links, as ON DELETE CASCADE does.
   */
  static readonly Test: Layer.Layer<RolesRepo, never, AccountsRepo> = Layer.effect(
    RolesRepo,
    Effect.gen(function*() {
      const accounts = yield* AccountsRepo
      const state = yield* Ref.make<TestState>(EMPTY)
      const read = <A>(f: (s: TestState) => A) => Effect.map(Ref.get(state), f)
      // One step of state, failing or not; a failure keeps only the counters the step advanced.
      const step = <A>(f: (s: TestState) => readonly [Effect.Effect<A, IamError>, TestState]) =>
        Effect.flatten(Ref.modify(state, f))
      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
      const userExists = (userId: number) => Effect.map(accounts.findById(userId), (user) => user !== undefined)
      const roleById = (s: TestState) => new Map(s.roles.map((r) => [r.id, r]))

      const createRole = (name: string, description: string | null) =>
        Effect.flatMap(now, (at) =>
          step((s) => {
            const id = s.lastRoleId + 1
            if (s.roles.some((r) => r.name === name)) return [Effect.fail(IamError.exists(ROLE_NAME_TAKEN)), { ...s, lastRoleId: id }]
            const role: RoleRecord = { id, name, description, createdAt: at, updatedAt: at }
            return [Effect.succeed(role), { ...s, lastRoleId: id, roles: [...s.roles, role] }]
          }))

      const ensureRole = (name: string, description: string) =>
        Effect.flatMap(now, (at) =>
          step((s) => {
            const id = s.lastRoleId + 1
            const existing = s.roles.find((r) => r.name === name)
            if (existing !== undefined) return [Effect.succeed(existing.id), { ...s, lastRoleId: id }]
            const role: RoleRecord = { id, name, description, createdAt: at, updatedAt: at }
            return [Effect.succeed(id), { ...s, lastRoleId: id, roles: [...s.roles, role] }]
          }))

      const deleteRole = (id: number) =>
        step((s) => [Effect.succeed(s.roles.some((r) => r.id === id)), {
          ...s,
          roles: s.roles.filter((r) => r.id !== id),
          userRoles: s.userRoles.filter(([, roleId]) => roleId !== id),
          rolePermissions: s.rolePermissions.filter(([roleId]) => roleId !== id)
        }])

      const assign = (userId: number, roleId: number) =>
        Effect.flatMap(userExists(userId), (userFound) =>
          step((s) =>
            !userFound || !s.roles.some((r) => r.id === roleId)
              ? [Effect.fail(IamError.notFound(ASSIGNMENT_DANGLES)), s]
              : [Effect.void, { ...s, userRoles: addPair(s.userRoles, [userId, roleId]) }]
          ))

      const unassign = (userId: number, roleId: number) =>
        step((s) => [Effect.void, { ...s, userRoles: s.userRoles.filter(([u, r]) => u !== userId || r !== roleId) }])

      const rolesOfState = (s: TestState, userId: number) =>
        s.roles.filter((role) => s.userRoles.some(([u, r]) => u === userId && r === role.id))

      const createPermission = (input: NewPermission) =>
        Effect.flatMap(now, (at) =>
          step((s) => {
            const id = s.lastPermissionId + 1
            if (s.permissions.some((p) => p.name === input.name)) {
              return [Effect.fail(IamError.exists(PERMISSION_NAME_TAKEN)), { ...s, lastPermissionId: id }]
            }
            const permission: PermissionRecord = { ...input, id, createdAt: at, updatedAt: at }
            return [Effect.succeed(permission), { ...s, lastPermissionId: id, permissions: [...s.permissions, permission] }]
          }))

      const deletePermission = (id: number) =>
        step((s) => [Effect.succeed(s.permissions.some((p) => p.id === id)), {
          ...s,
          permissions: s.permissions.filter((p) => p.id !== id),
          rolePermissions: s.rolePermissions.filter(([, permissionId]) => permissionId !== id)
        }])

      const grant = (roleId: number, permissionId: number) =>
        step((s) =>
          !s.roles.some((r) => r.id === roleId) || !s.permissions.some((p) => p.id === permissionId)
            ? [Effect.fail(IamError.notFound(GRANT_DANGLES)), s]
            : [Effect.void, { ...s, rolePermissions: addPair(s.rolePermissions, [roleId, permissionId]) }]
        )

      const revoke = (roleId: number, permissionId: number) =>
        step((s) => [Effect.void, {
          ...s,
          rolePermissions: s.rolePermissions.filter(([r, p]) => r !== roleId || p !== permissionId)
        }])

      return RolesRepo.make({
        userExists,
        roleExists: (roleId) => read((s) => s.roles.some((r) => r.id === roleId)),
        createRole,
        ensureRole,
        listRoles: read((s) => s.roles),
        deleteRole,
        assign,
        unassign,
        // One process's memory has no concurrent transactions to queue: the read is the lock.
        lockRole: (roleId) => read((s) => s.roles.find((r) => r.id === roleId)?.name),
        holdersOf: (roleId) =>
          read((s) => s.userRoles.filter(([, r]) => r === roleId).map(([u]) => u).sort((a, b) => a - b)),
        rolesOf: (userId) => read((s) => rolesOfState(s, userId)),
        // Code-unit order, as the C collation sorts; a database with a linguistic collation may order mixed case differently.
        roleNamesOf: (userId) => read((s) => rolesOfState(s, userId).map((r) => r.name).sort()),
        createPermission,
        listPermissions: read((s) => s.permissions),
        findPermission: (id) => read((s) => s.permissions.find((p) => p.id === id)),
        deletePermission,
        grant,
        revoke,
        permissionsOf: (roleId) =>
          read((s) => s.permissions.filter((p) => s.rolePermissions.some(([r, q]) => r === roleId && q === p.id))),
        grants: read((s) => {
          const roles = roleById(s)
          const permissions = new Map(s.permissions.map((p) => [p.id, p]))
          return s.rolePermissions.map(([roleId, permissionId]) => {
            const permission = permissions.get(permissionId)!
            return { role: roles.get(roleId)!.name, resource: permission.resource, action: permission.action }
          })
        }),
        assignments: read((s) => {
          const roles = roleById(s)
          return s.userRoles.map(([userId, roleId]) => ({ userId, role: roles.get(roleId)!.name }))
        }),
        policyVersion: read((s) => String(s.policyVersion)),
        bumpPolicyVersion: Ref.update(state, (s) => ({ ...s, policyVersion: s.policyVersion + 1 }))
      })
    })
  )
}

interface TestState {
  readonly roles: ReadonlyArray<RoleRecord>
  readonly permissions: ReadonlyArray<PermissionRecord>
  /** [user id, role id] */
  readonly userRoles: ReadonlyArray<readonly [number, number]>
  /** [role id, permission id] */
  readonly rolePermissions: ReadonlyArray<readonly [number, number]>
  readonly lastRoleId: number
  readonly lastPermissionId: number
  readonly policyVersion: number
}

const EMPTY: TestState = {
  roles: [], permissions: [], userRoles: [], rolePermissions: [], lastRoleId: 0, lastPermissionId: 0, policyVersion: 1
}

const addPair = (pairs: ReadonlyArray<readonly [number, number]>, pair: readonly [number, number]) =>
  pairs.some(([a, b]) => a === pair[0] && b === pair[1]) ? pairs : [...pairs, pair]
