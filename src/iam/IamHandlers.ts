import { create } from "@bufbuild/protobuf"
import { timestampFromDate } from "@bufbuild/protobuf/wkt"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as pb from "../gen/gatehouse/iam/v1/iam_pb.js"
import { Authority } from "./access/Authority.js"
import { IamPolicy } from "./access/IamPolicy.js"
import { type PermissionRecord, type RoleRecord, Roles } from "./access/Roles.js"
import { type Account, Accounts, type LoginIdentifier } from "./accounts/Accounts.js"
import {
  checkDescription, checkId, checkLoginUsername, checkPermissionName, checkRegistration, checkRoleName, normalizeEmail,
  PASSWORD_MAX_BYTES
} from "./domain/AccountRules.js"
import { accessStep, type Guard, GUARDS, needsCredentials, type Operation, OPERATIONS } from "./domain/Guards.js"
import { IamError } from "./domain/IamError.js"
import { OAuthSignIn } from "./oauth/OAuthSignIn.js"
import { actionEnum, actionOf, resourceEnum, resourceOf } from "./ProtoEnums.js"
import { bearerToken, type Caller, IamSessions, type IssuedTokens } from "./tokens/IamSessions.js"
import { TwoStep } from "./twostep/TwoStep.js"
import { traced, tracedSpan } from "../platform/Traced.js"

/** What a transport passes along with a request: the caller's credentials, and which client sent it. */
export interface CallMeta {
  readonly authorization: string | undefined
  /**
   * The client the login throttle counts the request against (platform/http/RateLimitKey's clientAddress: the
   * RATE_LIMIT_HEADER value behind a proxy, else the peer's address). Undefined: not counted per client.
   */
  readonly client?: string | undefined
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
  readonly LoginSecondStep: readonly [pb.LoginSecondStepRequest, pb.LoginSecondStepResponse]
  readonly EnrollTotp: readonly [pb.EnrollTotpRequest, pb.EnrollTotpResponse]
  readonly VerifyTotpEnrollment: readonly [pb.VerifyTotpEnrollmentRequest, pb.VerifyTotpEnrollmentResponse]
  readonly RemoveTotp: readonly [pb.RemoveTotpRequest, pb.RemoveTotpResponse]
  readonly StartOAuthSignIn: readonly [pb.StartOAuthSignInRequest, pb.StartOAuthSignInResponse]
  readonly FinishOAuthSignIn: readonly [pb.FinishOAuthSignInRequest, pb.FinishOAuthSignInResponse]
}

export type IamHandler<Op extends Operation> = (
  request: IamMessages[Op][0],
  meta: CallMeta
) => Effect.Effect<IamMessages[Op][1], IamError>

/**
 * The one set of handlers behind every transport (gRPC/Connect, REST, @effect/rpc): protobuf message in,
 * protobuf message out, IamError on failure. Every handler is built by one combinator that applies the
 * operation's guard (domain/Guards); the handler itself checks its input and calls the feature services.
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

/** What a guarded handler gets besides its request. */
interface GuardedContext {
  readonly meta: CallMeta
  /** The authenticated caller; undefined for a Public operation. */
  readonly caller: Caller | undefined
}

/**
 * An operation's implementation, before its guard is applied. `about` runs first, when given: request checks
 * that answer INVALID_ARGUMENT whoever calls, and the user the call is about (0 = the caller), which a
 * SelfOrPolicy guard compares with the caller. Without it the guard runs first.
 */
interface Guarded<Op extends Operation> {
  readonly about?: (request: IamMessages[Op][0]) => Effect.Effect<number, IamError>
  readonly handle: (request: IamMessages[Op][0], context: GuardedContext) => Effect.Effect<IamMessages[Op][1], IamError>
}

/** A TOTP code field: required; its form is the TOTP rule's to judge (a malformed code is simply a wrong one). */
const requireCode = (code: string): Effect.Effect<string, IamError> =>
  code === "" ? IamError.invalid("code is required") : Effect.succeed(code)

export const IamHandlersLive: Layer.Layer<IamHandlers, never, Accounts | IamSessions | Roles | IamPolicy | Authority | TwoStep | OAuthSignIn> = Layer.effect(
  IamHandlers,
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const sessions = yield* IamSessions
    const roles = yield* Roles
    const policy = yield* IamPolicy
    const authority = yield* Authority
    const twoStep = yield* TwoStep
    const oauth = yield* OAuthSignIn

    /** A guard that needs credentials: who the caller is, after the policy said yes. */
    const authorize = traced("IamHandlers.authorize")(function*(guard: Guard, caller: Caller, targetUserId: number) {
      const step = accessStep(guard, caller.userId, targetUserId)
      if (step._tag === "Unauthenticated") return yield* IamError.unauthenticated()
      if (step._tag === "Enforce" && !(yield* policy.enforce(caller.userId, step.resource, step.action))) {
        return yield* IamError.denied(`permission denied: ${step.resource}/${step.action} is required`)
      }
      return caller
    })

    /**
     * An operation's handler: its guard, GUARDS[op], applied before its implementation, whatever that does. A guarded
     * operation authenticates its caller first, so a request without valid credentials is UNAUTHENTICATED whatever it
     * asks; the question is read (`about`) before the policy decides, which needs to know whom it is about.
     */
    const guarded = <Op extends Operation>(op: Op, operation: Guarded<Op>): IamHandler<Op> => {
      const guard = GUARDS[op]
      return (request, meta) =>
        Effect.gen(function*() {
          const authenticated = needsCredentials(guard) ? yield* sessions.authenticate(meta.authorization) : undefined
          const targetUserId = operation.about === undefined ? 0 : yield* operation.about(request)
          const caller = authenticated === undefined ? undefined : yield* authorize(guard, authenticated, targetUserId)
          return yield* operation.handle(request, { meta, caller })
        }).pipe(tracedSpan(`IamHandlers.${op}`))
    }

    /** The account whose credentials came with a public call, or null without any; bad credentials are refused. */
    const callerIfAny = (meta: CallMeta): Effect.Effect<number | null, IamError> =>
      meta.authorization === undefined || meta.authorization === ""
        ? Effect.succeed(null)
        : Effect.map(sessions.authenticate(meta.authorization), (caller) => caller.userId)

    /**
     * A first step that succeeded (a password, a provider identity the account linked): the profile and tokens, or for an account
     * with two-step verification on, a ticket instead (nor its profile, until the code).
     */
    const signIn = traced("IamHandlers.signIn")(function*(account: Account) {
      const second = yield* twoStep.ticketFor(account.id)
      if (Option.isSome(second)) {
        return {
          secondStep: { ticket: second.value.ticket, expiresAt: timestampFromDate(second.value.expiresAt), methods: ["totp"] }
        }
      }
      const tokens = yield* sessions.issue(account)
      return { user: userMessage(account), token: tokenMessage(tokens) }
    })

    const operations: { readonly [Op in Operation]: Guarded<Op> } = {
      Register: { handle: (request) => Effect.gen(function*() {
        const input = yield* check(checkRegistration(request))
        const account = yield* accounts.register({ ...input, password: Redacted.make(input.password) })
        const tokens = yield* sessions.issue(account)
        return create(pb.RegisterResponseSchema, { user: userMessage(account), token: tokenMessage(tokens) })
      }) },
      Login: { handle: (request, { meta }) => Effect.gen(function*() {
        const identifier = yield* loginIdentifier(request)
        if (request.password === "") return yield* IamError.invalid("password is required")
        if (Buffer.byteLength(request.password, "utf8") > PASSWORD_MAX_BYTES) {
          return yield* IamError.invalid(`password must be at most ${PASSWORD_MAX_BYTES} bytes`)
        }
        const account = yield* accounts.login(identifier, Redacted.make(request.password), meta.client)
        return create(pb.LoginResponseSchema, yield* signIn(account))
      }) },
      LoginSecondStep: { handle: (request) => Effect.gen(function*() {
        if (request.ticket === "") return yield* IamError.invalid("ticket is required")
        const code = yield* requireCode(request.code)
        const account = yield* accounts.find(yield* twoStep.redeem(request.ticket, code))
        if (account === undefined) return yield* IamError.unauthenticated("ticket is not valid")
        const tokens = yield* sessions.issue(account)
        return create(pb.LoginSecondStepResponseSchema, { user: userMessage(account), token: tokenMessage(tokens) })
      }) },
      EnrollTotp: { handle: (_request, { caller }) => Effect.gen(function*() {
        const account = yield* accounts.find(caller!.userId)
        if (account === undefined) return yield* IamError.unauthenticated()
        const enrollment = yield* twoStep.enroll(account)
        return create(pb.EnrollTotpResponseSchema, { secret: enrollment.secret, uri: enrollment.uri })
      }) },
      VerifyTotpEnrollment: { handle: (request, { caller }) => Effect.gen(function*() {
        yield* twoStep.confirm(caller!.userId, yield* requireCode(request.code))
        return create(pb.VerifyTotpEnrollmentResponseSchema)
      }) },
      RemoveTotp: {
        about: (request) => request.userId < 0 ? IamError.invalid("user_id must not be negative") : Effect.succeed(request.userId),
        handle: (request, { caller }) => Effect.gen(function*() {
          const userId = request.userId === 0 ? caller!.userId : request.userId
          // Its own factor the account removes with a code from it, so a stolen access token alone cannot turn the
          // second step off; another account's, the guard already required USER/UPDATE of (a lost device's reset).
          const code = userId === caller!.userId ? Option.some(yield* requireCode(request.code)) : Option.none()
          yield* twoStep.remove(userId, code)
          return create(pb.RemoveTotpResponseSchema)
        })
      },
      StartOAuthSignIn: { handle: (request, { meta }) => Effect.gen(function*() {
        if (request.provider === "") return yield* IamError.invalid("provider is required")
        // With credentials, a link of the caller's account; bad credentials are refused, never taken for a sign-in.
        const started = yield* oauth.start(request.provider, yield* callerIfAny(meta))
        return create(pb.StartOAuthSignInResponseSchema, {
          authorizationUrl: started.authorizationUrl,
          state: started.state,
          expiresAt: timestampFromDate(started.expiresAt)
        })
      }) },
      FinishOAuthSignIn: { handle: (request, { meta }) => Effect.gen(function*() {
        if (request.code === "") return yield* IamError.invalid("code is required")
        if (request.state === "") return yield* IamError.invalid("state is required")
        const account = yield* oauth.finish(request.code, request.state, callerIfAny(meta))
        return create(pb.FinishOAuthSignInResponseSchema, yield* signIn(account))
      }) },
      Logout: { handle: (request, { meta }) => Effect.gen(function*() {
        const accessToken = request.accessToken !== "" ? request.accessToken : bearerToken(meta.authorization)
        yield* sessions.logout({ accessToken, refreshToken: request.refreshToken, allSessions: request.allSessions })
        return create(pb.LogoutResponseSchema, { success: true })
      }) },
      GenerateToken: { handle: (request, { caller }) => Effect.gen(function*() {
        const userId = yield* check(checkId("user_id", request.userId))
        if (request.ttlSeconds < 0) return yield* IamError.invalid("ttl_seconds must not be negative")
        const account = yield* accounts.find(userId)
        if (account === undefined) return yield* IamError.notFound("user not found")
        yield* authority.requireTokenFor(caller!.userId, userId)
        const ttl = request.ttlSeconds > 0 ? Duration.seconds(request.ttlSeconds) : undefined
        return create(pb.GenerateTokenResponseSchema, { token: tokenMessage(yield* sessions.issue(account, ttl)) })
      }) },
      RefreshToken: { handle: (request) => Effect.gen(function*() {
        if (request.refreshToken === "") return yield* IamError.invalid("refresh_token is required")
        return create(pb.RefreshTokenResponseSchema, { token: tokenMessage(yield* sessions.refresh(request.refreshToken)) })
      }) },
      ValidateToken: { handle: (request, { meta }) => Effect.gen(function*() {
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
      }) },
      CreateRole: { handle: (request) => Effect.gen(function*() {
        const name = yield* check(checkRoleName(request.name))
        const description = yield* check(checkDescription(request.description))
        return create(pb.CreateRoleResponseSchema, { role: roleMessage(yield* roles.createRole(name, description)) })
      }) },
      ListRoles: { handle: () => Effect.gen(function*() {
        return create(pb.ListRolesResponseSchema, { roles: (yield* roles.listRoles).map(roleMessage) })
      }) },
      DeleteRole: { handle: (request, { caller }) => Effect.gen(function*() {
        yield* roles.deleteRole(caller!.userId, yield* check(checkId("role_id", request.roleId)))
        return create(pb.DeleteRoleResponseSchema)
      }) },
      AssignRole: { handle: (request, { caller }) => Effect.gen(function*() {
        const userId = yield* check(checkId("user_id", request.userId))
        yield* roles.assign(caller!.userId, userId, yield* check(checkId("role_id", request.roleId)))
        return create(pb.AssignRoleResponseSchema)
      }) },
      UnassignRole: { handle: (request, { caller }) => Effect.gen(function*() {
        const userId = yield* check(checkId("user_id", request.userId))
        yield* roles.unassign(caller!.userId, userId, yield* check(checkId("role_id", request.roleId)))
        return create(pb.UnassignRoleResponseSchema)
      }) },
      ListUserRoles: {
        about: (request) => request.userId < 0 ? IamError.invalid("user_id must not be negative") : Effect.succeed(request.userId),
        handle: (request, { caller }) => Effect.gen(function*() {
          const userId = request.userId === 0 ? caller!.userId : request.userId
          return create(pb.ListUserRolesResponseSchema, { roles: (yield* roles.rolesOf(userId)).map(roleMessage) })
        })
      },
      CreatePermission: { handle: (request) => Effect.gen(function*() {
        const name = yield* check(checkPermissionName(request.name))
        const description = yield* check(checkDescription(request.description))
        const { action, resource } = yield* resourceAndAction(request)
        const permission = yield* roles.createPermission({ name, description, resource, action })
        return create(pb.CreatePermissionResponseSchema, { permission: permissionMessage(permission) })
      }) },
      ListPermissions: { handle: () => Effect.gen(function*() {
        return create(pb.ListPermissionsResponseSchema, { permissions: (yield* roles.listPermissions).map(permissionMessage) })
      }) },
      DeletePermission: { handle: (request, { caller }) => Effect.gen(function*() {
        yield* roles.deletePermission(caller!.userId, yield* check(checkId("permission_id", request.permissionId)))
        return create(pb.DeletePermissionResponseSchema)
      }) },
      GrantPermission: { handle: (request, { caller }) => Effect.gen(function*() {
        const roleId = yield* check(checkId("role_id", request.roleId))
        yield* roles.grant(caller!.userId, roleId, yield* check(checkId("permission_id", request.permissionId)))
        return create(pb.GrantPermissionResponseSchema)
      }) },
      RevokePermission: { handle: (request, { caller }) => Effect.gen(function*() {
        const roleId = yield* check(checkId("role_id", request.roleId))
        yield* roles.revoke(caller!.userId, roleId, yield* check(checkId("permission_id", request.permissionId)))
        return create(pb.RevokePermissionResponseSchema)
      }) },
      ListRolePermissions: { handle: (request) => Effect.gen(function*() {
        const roleId = yield* check(checkId("role_id", request.roleId))
        return create(pb.ListRolePermissionsResponseSchema, { permissions: (yield* roles.permissionsOf(roleId)).map(permissionMessage) })
      }) },
      CheckPermission: {
        // A malformed question is INVALID_ARGUMENT whoever is signed in, so these checks come before the policy.
        about: (request) =>
          request.userId < 0
            ? IamError.invalid("user_id must not be negative")
            : Effect.as(resourceAndAction(request), request.userId),
        handle: (request, { caller }) => Effect.gen(function*() {
          const { action, resource } = yield* resourceAndAction(request)
          const userId = request.userId === 0 ? caller!.userId : request.userId
          // An unknown user has no roles, so the policy denies: existence is not revealed.
          return create(pb.CheckPermissionResponseSchema, { allowed: yield* policy.enforce(userId, resource, action) })
        })
      }
    }
    // Every handler goes through guarded: none can skip its guard.
    return Object.fromEntries(OPERATIONS.map((op) => [op, guarded(op, operations[op] as Guarded<typeof op>)])) as {
      readonly [Op in Operation]: IamHandler<Op>
    }
  })
)
