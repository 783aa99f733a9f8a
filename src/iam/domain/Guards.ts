import type { Action, Resource } from "./ResourceAction.js"

/** Every operation of the contract, by its proto method name (the same name on every transport). */
export const OPERATIONS = [
  "Register", "Login", "Logout", "GenerateToken", "RefreshToken", "ValidateToken",
  "CreateRole", "ListRoles", "DeleteRole", "AssignRole", "UnassignRole", "ListUserRoles",
  "CreatePermission", "ListPermissions", "DeletePermission", "GrantPermission", "RevokePermission",
  "ListRolePermissions", "CheckPermission",
  "LoginSecondStep", "EnrollTotp", "VerifyTotpEnrollment", "RemoveTotp",
  "StartOAuthSignIn", "FinishOAuthSignIn"
] as const
export type Operation = (typeof OPERATIONS)[number]

export type Guard =
  /** No credentials: the request itself carries them (password, refresh token) or asks about a token. */
  | { readonly _tag: "Public" }
  /** The policy must allow the caller `action` on `resource`. */
  | { readonly _tag: "Policy"; readonly resource: Resource; readonly action: Action }
  /** Any signed-in caller, acting on their own account only (the request names no other). */
  | { readonly _tag: "Self" }
  /** Allowed for the caller's own user id; for anyone else's, the policy decides. */
  | { readonly _tag: "SelfOrPolicy"; readonly resource: Resource; readonly action: Action }

const open: Guard = { _tag: "Public" }
const policy = (resource: Resource, action: Action): Guard => ({ _tag: "Policy", resource, action })
const self: Guard = { _tag: "Self" }
const selfOr = (resource: Resource, action: Action): Guard => ({ _tag: "SelfOrPolicy", resource, action })

/**
 * Which permission each operation needs. Logout authenticates with the token it revokes, so it is Public
 * here and checks the token itself. Assigning a role changes what the role means for a user, so it is
 * ROLE/UPDATE, as granting a permission is PERMISSION/UPDATE. LoginSecondStep is Public: its ticket is the
 * credential, as a refresh token is RefreshToken's. A TOTP factor is enrolled and confirmed by its owner only (the
 * secret goes to whoever asks); removing another account's factor is USER/UPDATE, an administrator's reset. The OAuth2
 * sign-in RPCs are Public, as Login is: the provider's code and the flow's state are the credentials.
 */
export const GUARDS: Readonly<Record<Operation, Guard>> = {
  Register: open,
  Login: open,
  Logout: open,
  GenerateToken: policy("TOKEN", "CREATE"),
  RefreshToken: open,
  ValidateToken: open,
  CreateRole: policy("ROLE", "CREATE"),
  ListRoles: policy("ROLE", "LIST"),
  DeleteRole: policy("ROLE", "DELETE"),
  AssignRole: policy("ROLE", "UPDATE"),
  UnassignRole: policy("ROLE", "UPDATE"),
  ListUserRoles: selfOr("ROLE", "READ"),
  CreatePermission: policy("PERMISSION", "CREATE"),
  ListPermissions: policy("PERMISSION", "LIST"),
  DeletePermission: policy("PERMISSION", "DELETE"),
  GrantPermission: policy("PERMISSION", "UPDATE"),
  RevokePermission: policy("PERMISSION", "UPDATE"),
  ListRolePermissions: policy("PERMISSION", "READ"),
  CheckPermission: selfOr("PERMISSION", "READ"),
  LoginSecondStep: open,
  EnrollTotp: self,
  VerifyTotpEnrollment: self,
  RemoveTotp: selfOr("USER", "UPDATE"),
  StartOAuthSignIn: open,
  FinishOAuthSignIn: open
}

/** Whether a call under `guard` must carry valid credentials: every guard but Public. */
export const needsCredentials = (guard: Guard): boolean => guard._tag !== "Public"

export type AccessStep =
  | { readonly _tag: "Allow" }
  | { readonly _tag: "Unauthenticated" }
  | { readonly _tag: "Enforce"; readonly resource: Resource; readonly action: Action }

/**
 * What the guard asks of one call: `callerId` is the authenticated user (undefined without a valid token),
 * `targetUserId` the user the call is about (0 = the caller).
 */
export const accessStep = (guard: Guard, callerId: number | undefined, targetUserId: number): AccessStep =>
  guard._tag === "Public"
    ? { _tag: "Allow" }
    : callerId === undefined
    ? { _tag: "Unauthenticated" }
    : guard._tag === "Self"
    ? { _tag: "Allow" }
    : guard._tag === "SelfOrPolicy" && (targetUserId === 0 || targetUserId === callerId)
    ? { _tag: "Allow" }
    : { _tag: "Enforce", resource: guard.resource, action: guard.action }
