import { create } from "@bufbuild/protobuf"
import { timestampFromDate } from "@bufbuild/protobuf/wkt"
import { Context, Duration, Effect, Either, Layer, Redacted } from "effect"
import * as pb from "../gen/gatehouse/iam/v1/iam_pb.js"
import { IamPolicy } from "./access/IamPolicy.js"
import { type PermissionRecord, type RoleRecord, Roles } from "./access/Roles.js"
import { type Account, Accounts, type LoginIdentifier } from "./accounts/Accounts.js"
import {
  checkDescription, checkId, checkLoginUsername, checkPermissionName, checkRegistration, checkRoleName, normalizeEmail,
  PASSWORD_MAX_BYTES
} from "./domain/AccountRules.js"
import { accessStep, GUARDS, type Operation } from "./domain/Guards.js"
import { IamError } from "./domain/IamError.js"
import { actionEnum, actionOf, resourceEnum, resourceOf } from "./ProtoEnums.js"
import { bearerToken, type Caller, type IssuedTokens, Sessions } from "./tokens/Sessions.js"

/** What a transport passes along with a request: the caller's credentials, nothing else. */
export interface CallMeta {
  readonly authorization: string | undefined
}

/** Request and response message of every operation. */
export interface IamMessages {
  readonly Register: readonly [pb.RegisterRequest, pb.RegisterResponse]
  readonly Login: readonly [pb.LoginRequest, pb.LoginResponse]
  readonly Logout: readonly [pb.LogoutRequest, pb.LogoutResponse]
  readonly GenerateToken: readonly [pb.GenerateTokenRequest, pb.GenerateTokenResponse]
  readonly RefreshToken: readonly [pb.RefreshTokenRequest, pb.RefreshTokenResponse]
  readonly ValidateToken: readonly [pb.ValidateTokenRequest, pb.ValidateTokenResponse]
  readonly CreateRole: readonly [pb.CreateRoleRequest, pb.CreateRoleResponse]
  readonly ListRoles: readonly [pb.ListRolesRequest, pb.ListRolesResponse]
  readonly DeleteRole: readonly [pb.DeleteRoleRequest, pb.DeleteRoleResponse]
  readonly AssignRole: readonly [pb.AssignRoleRequest, pb.AssignRoleResponse]
  readonly UnassignRole: readonly [pb.UnassignRoleRequest, pb.UnassignRoleResponse]
  readonly ListUserRoles: readonly [pb.ListUserRolesRequest, pb.ListUserRolesResponse]
  readonly CreatePermission: readonly [pb.CreatePermissionRequest, pb.CreatePermissionResponse]
  readonly ListPermissions: readonly [pb.ListPermissionsRequest, pb.ListPermissionsResponse]
  readonly DeletePermission: readonly [pb.DeletePermissionRequest, pb.DeletePermissionResponse]
  readonly GrantPermission: readonly [pb.GrantPermissionRequest, pb.GrantPermissionResponse]
  readonly RevokePermission: readonly [pb.RevokePermissionRequest, pb.RevokePermissionResponse]
  readonly ListRolePermissions: readonly [pb.ListRolePermissionsRequest, pb.ListRolePermissionsResponse]
  readonly CheckPermission: readonly [pb.CheckPermissionRequest, pb.CheckPermissionResponse]
}

export type IamHandler<Op extends Operation> = (
  request: IamMessages[Op][0],
  meta: CallMeta
) => Effect.Effect<IamMessages[Op][1], IamError>

/**
 * The one set of handlers behind every transport (gRPC/Connect, REST, @effect/rpc): protobuf message in,
 * protobuf message out, IamError on failure. Each handler checks its input, applies the operation's guard
 * (domain/Guards) and calls the feature services.
 */
export class IamHandlers extends Context.Tag("iam/IamHandlers")<IamHandlers, {
  readonly [Op in Operation]: IamHandler<Op>
}>() {}

/** An operation's handler seen without its message types, for transports that bind methods generically. */
export type AnyIamHandler = (request: never, meta: CallMeta) => Effect.Effect<unknown, IamError>

export const anyHandler = (handlers: Context.Tag.Service<IamHandlers>, operation: Operation): AnyIamHandler =>
  handlers[operation] as unknown as AnyIamHandler

const userMessage = (account: Account): pb.User =>
  create(pb.UserSchema, {
    id: account.id,
    username: account.username,
    email: account.email,
    createdAt: timestampFromDate(account.createdAt),
    updatedAt: timestampFromDate(account.updatedAt)
  })

const roleMessage = (role: RoleRecord): pb.Role =>
  create(pb.RoleSchema, {
    id: role.id,
    name: role.name,
    description: role.description ?? "",
    createdAt: timestampFromDate(role.createdAt),
    updatedAt: timestampFromDate(role.updatedAt)
  })

const permissionMessage = (permission: PermissionRecord): pb.Permission =>
  create(pb.PermissionSchema, {
    id: permission.id,
    name: permission.name,
    description: permission.description ?? "",
    resource: resourceEnum(permission.resource),
    action: actionEnum(permission.action),
    createdAt: timestampFromDate(permission.createdAt),
    updatedAt: timestampFromDate(permission.updatedAt)
  })

const tokenMessage = (tokens: IssuedTokens): pb.TokenPair =>
  create(pb.TokenPairSchema, {
    accessToken: tokens.accessToken,
    tokenType: "Bearer",
    expiresIn: tokens.expiresIn,
    refreshToken: tokens.refreshToken,
    expiresAt: timestampFromDate(tokens.expiresAt),
    refreshExpiresAt: timestampFromDate(tokens.refreshExpiresAt)
  })

const check = <A>(result: Either.Either<A, IamError>): Effect.Effect<A, IamError> => result

const resourceAndAction = (request: { resource: pb.ResourceType; action: pb.ActionType }) =>
  Effect.gen(function*() {
    const resource = resourceOf(request.resource)
    const action = actionOf(request.action)
    if (resource === undefined) return yield* IamError.invalid("resource must be one of the ResourceType values")
    if (action === undefined) return yield* IamError.invalid("action must be one of the ActionType values")
    return { resource, action }
  })

const loginIdentifier = (request: pb.LoginRequest): Effect.Effect<LoginIdentifier, IamError> => {
  const { identifier } = request
  switch (identifier.case) {
    case "username":
      return Effect.map(check(checkLoginUsername(identifier.value)), (username) => ({ username }))
    case "email":
      return Effect.map(check(normalizeEmail(identifier.value)), (email) => ({ email }))
    default:
      return IamError.invalid("username or email is required")
  }
}

export const IamHandlersLive: Layer.Layer<IamHandlers, never, Accounts | Sessions | Roles | IamPolicy> = Layer.effect(
  IamHandlers,
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const sessions = yield* Sessions
    const roles = yield* Roles
    const policy = yield* IamPolicy

    /** The operation's guard: who the caller is, if the operation needs one, after the policy said yes. */
    const authorize = Effect.fn("IamHandlers.authorize")(function*(op: Operation, meta: CallMeta, targetUserId = 0) {
      const guard = GUARDS[op]
      if (guard._tag === "Public") return undefined
      const caller: Caller = yield* sessions.authenticate(meta.authorization)
      const step = accessStep(guard, caller.userId, targetUserId)
      if (step._tag === "Unauthenticated") return yield* IamError.unauthenticated()
      if (step._tag === "Enforce" && !(yield* policy.enforce(caller.userId, step.resource, step.action))) {
        return yield* IamError.denied(`permission denied: ${step.resource}/${step.action} is required`)
      }
      return caller
    })

    const handlers: { readonly [Op in Operation]: IamHandler<Op> } = {
      Register: Effect.fn("IamHandlers.Register")(function*(request) {
        const input = yield* check(checkRegistration(request))
        const account = yield* accounts.register({ ...input, password: Redacted.make(input.password) })
        const tokens = yield* sessions.issue(account)
        return create(pb.RegisterResponseSchema, { user: userMessage(account), token: tokenMessage(tokens) })
      }),
      Login: Effect.fn("IamHandlers.Login")(function*(request) {
        const identifier = yield* loginIdentifier(request)
        if (request.password === "") return yield* IamError.invalid("password is required")
        if (Buffer.byteLength(request.password, "utf8") > PASSWORD_MAX_BYTES) {
          return yield* IamError.invalid(`password must be at most ${PASSWORD_MAX_BYTES} bytes`)
        }
        const account = yield* accounts.login(identifier, Redacted.make(request.password))
        const tokens = yield* sessions.issue(account)
        return create(pb.LoginResponseSchema, { user: userMessage(account), token: tokenMessage(tokens) })
      }),
      Logout: Effect.fn("IamHandlers.Logout")(function*(request, meta) {
        const accessToken = request.accessToken !== "" ? request.accessToken : bearerToken(meta.authorization)
        yield* sessions.logout({ accessToken, refreshToken: request.refreshToken, allSessions: request.allSessions })
        return create(pb.LogoutResponseSchema, { success: true })
      }),
      GenerateToken: Effect.fn("IamHandlers.GenerateToken")(function*(request, meta) {
        yield* authorize("GenerateToken", meta)
        const userId = yield* check(checkId("user_id", request.userId))
        if (request.ttlSeconds < 0) return yield* IamError.invalid("ttl_seconds must not be negative")
        const account = yield* accounts.find(userId)
        if (account === undefined) return yield* IamError.notFound("user not found")
        const ttl = request.ttlSeconds > 0 ? Duration.seconds(request.ttlSeconds) : undefined
        return create(pb.GenerateTokenResponseSchema, { token: tokenMessage(yield* sessions.issue(account, ttl)) })
      }),
      RefreshToken: Effect.fn("IamHandlers.RefreshToken")(function*(request) {
        if (request.refreshToken === "") return yield* IamError.invalid("refresh_token is required")
        return create(pb.RefreshTokenResponseSchema, { token: tokenMessage(yield* sessions.refresh(request.refreshToken)) })
      }),
      ValidateToken: Effect.fn("IamHandlers.ValidateToken")(function*(request, meta) {
        const token = request.token !== "" ? request.token : bearerToken(meta.authorization)
        if (token === undefined) return yield* IamError.invalid("token is required")
        const result = yield* sessions.validate(token)
        if (!result.valid) return create(pb.ValidateTokenResponseSchema, { valid: false, reason: result.reason })
        const { claims } = result
        return create(pb.ValidateTokenResponseSchema, {
          valid: true,
          userId: Number(claims.sub),
          username: claims.username ?? "",
          roles: [...(claims.roles ?? [])],
          expiresAt: timestampFromDate(claims.exp),
          tokenId: claims.jti
        })
      }),
      CreateRole: Effect.fn("IamHandlers.CreateRole")(function*(request, meta) {
        yield* authorize("CreateRole", meta)
        const name = yield* check(checkRoleName(request.name))
        const description = yield* check(checkDescription(request.description))
        return create(pb.CreateRoleResponseSchema, { role: roleMessage(yield* roles.createRole(name, description)) })
      }),
      ListRoles: Effect.fn("IamHandlers.ListRoles")(function*(_request, meta) {
        yield* authorize("ListRoles", meta)
        return create(pb.ListRolesResponseSchema, { roles: (yield* roles.listRoles).map(roleMessage) })
      }),
      DeleteRole: Effect.fn("IamHandlers.DeleteRole")(function*(request, meta) {
        yield* authorize("DeleteRole", meta)
        yield* roles.deleteRole(yield* check(checkId("role_id", request.roleId)))
        return create(pb.DeleteRoleResponseSchema)
      }),
      AssignRole: Effect.fn("IamHandlers.AssignRole")(function*(request, meta) {
        yield* authorize("AssignRole", meta)
        const userId = yield* check(checkId("user_id", request.userId))
        yield* roles.assign(userId, yield* check(checkId("role_id", request.roleId)))
        return create(pb.AssignRoleResponseSchema)
      }),
      UnassignRole: Effect.fn("IamHandlers.UnassignRole")(function*(request, meta) {
        yield* authorize("UnassignRole", meta)
        const userId = yield* check(checkId("user_id", request.userId))
        yield* roles.unassign(userId, yield* check(checkId("role_id", request.roleId)))
        return create(pb.UnassignRoleResponseSchema)
      }),
      ListUserRoles: Effect.fn("IamHandlers.ListUserRoles")(function*(request, meta) {
        if (request.userId < 0) return yield* IamError.invalid("user_id must not be negative")
        const caller = yield* authorize("ListUserRoles", meta, request.userId)
        const userId = request.userId === 0 ? caller!.userId : request.userId
        return create(pb.ListUserRolesResponseSchema, { roles: (yield* roles.rolesOf(userId)).map(roleMessage) })
      }),
      CreatePermission: Effect.fn("IamHandlers.CreatePermission")(function*(request, meta) {
        yield* authorize("CreatePermission", meta)
        const name = yield* check(checkPermissionName(request.name))
        const description = yield* check(checkDescription(request.description))
        const { action, resource } = yield* resourceAndAction(request)
        const permission = yield* roles.createPermission({ name, description, resource, action })
        return create(pb.CreatePermissionResponseSchema, { permission: permissionMessage(permission) })
      }),
      ListPermissions: Effect.fn("IamHandlers.ListPermissions")(function*(_request, meta) {
        yield* authorize("ListPermissions", meta)
        return create(pb.ListPermissionsResponseSchema, { permissions: (yield* roles.listPermissions).map(permissionMessage) })
      }),
      DeletePermission: Effect.fn("IamHandlers.DeletePermission")(function*(request, meta) {
        yield* authorize("DeletePermission", meta)
        yield* roles.deletePermission(yield* check(checkId("permission_id", request.permissionId)))
        return create(pb.DeletePermissionResponseSchema)
      }),
      GrantPermission: Effect.fn("IamHandlers.GrantPermission")(function*(request, meta) {
        yield* authorize("GrantPermission", meta)
        const roleId = yield* check(checkId("role_id", request.roleId))
        yield* roles.grant(roleId, yield* check(checkId("permission_id", request.permissionId)))
        return create(pb.GrantPermissionResponseSchema)
      }),
      RevokePermission: Effect.fn("IamHandlers.RevokePermission")(function*(request, meta) {
        yield* authorize("RevokePermission", meta)
        const roleId = yield* check(checkId("role_id", request.roleId))
        yield* roles.revoke(roleId, yield* check(checkId("permission_id", request.permissionId)))
        return create(pb.RevokePermissionResponseSchema)
      }),
      ListRolePermissions: Effect.fn("IamHandlers.ListRolePermissions")(function*(request, meta) {
        yield* authorize("ListRolePermissions", meta)
        const roleId = yield* check(checkId("role_id", request.roleId))
        return create(pb.ListRolePermissionsResponseSchema, { permissions: (yield* roles.permissionsOf(roleId)).map(permissionMessage) })
      }),
      CheckPermission: Effect.fn("IamHandlers.CheckPermission")(function*(request, meta) {
        if (request.userId < 0) return yield* IamError.invalid("user_id must not be negative")
        const { action, resource } = yield* resourceAndAction(request)
        const caller = yield* authorize("CheckPermission", meta, request.userId)
        const userId = request.userId === 0 ? caller!.userId : request.userId
        // An unknown user has no roles, so the policy denies: existence is not revealed.
        return create(pb.CheckPermissionResponseSchema, { allowed: yield* policy.enforce(userId, resource, action) })
      })
    }
    return handlers
  })
)
