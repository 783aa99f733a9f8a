import { expect, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { bootstrapAdmin } from "../../src/iam/BootstrapAdmin.js"
import { grpc, grpcClients, type Reply } from "./support/GrpcJs.js"
import { IamEndpoints, IamTestServer } from "./support/IamTestServer.js"

const ok = (reply: Reply): any => {
  if (!reply.ok) expect.fail(`expected OK, got ${grpc.status[reply.code]}: ${reply.details}`)
  return reply.value
}
const code = (reply: Reply): string => (reply.ok ? "OK" : grpc.status[reply.code])

layer(IamTestServer(), { timeout: 120_000 })("IAM over gRPC, from a @grpc/grpc-js client loading proto/", (it) => {
  it.effect("serves every RPC of AuthService, RoleService and PermissionService with the documented codes", () =>
    Effect.gen(function*() {
      const { grpc: address } = yield* IamEndpoints
      const client = grpcClients(address)
      yield* Effect.addFinalizer(() => Effect.sync(client.close))
      const call = (...args: Parameters<typeof client.call>) => Effect.promise(() => client.call(...args))

      // Register, then the same names again, then bad input.
      const registered = ok(yield* call("AuthService", "Register", { username: "alice", password: "correct horse", email: "Alice@Example.com" }))
      expect(registered.user.username).toBe("alice")
      expect(registered.user.email).toBe("alice@example.com")
      expect(registered.token.token_type).toBe("Bearer")
      expect(registered.token.access_token).toMatch(/^v4\.public\./)
      expect(JSON.stringify(registered)).not.toContain("password")
      expect(code(yield* call("AuthService", "Register", { username: "alice", password: "another pass", email: "other@example.com" })))
        .toBe("ALREADY_EXISTS")
      expect(code(yield* call("AuthService", "Register", { username: "bob", password: "long enough", email: "no-at-sign" })))
        .toBe("INVALID_ARGUMENT")
      expect(code(yield* call("AuthService", "Register", { username: "x".repeat(101), password: "long enough", email: "x@example.com" })))
        .toBe("INVALID_ARGUMENT")

      // Login by username or email; wrong password and unknown user are indistinguishable.
      const login = ok(yield* call("AuthService", "Login", { username: "alice", password: "correct horse" }))
      const alice = login.token.access_token as string
      ok(yield* call("AuthService", "Login", { email: "ALICE@example.com", password: "correct horse" }))
      const wrong = yield* call("AuthService", "Login", { username: "alice", password: "wrong password" })
      const unknown = yield* call("AuthService", "Login", { username: "nobody", password: "wrong password" })
      expect([code(wrong), code(unknown)]).toEqual(["UNAUTHENTICATED", "UNAUTHENTICATED"])
      expect(!wrong.ok && !unknown.ok && wrong.details === unknown.details).toBe(true)

      // ValidateToken: from the body or from the authorization metadata.
      const valid = ok(yield* call("AuthService", "ValidateToken", {}, alice))
      expect(valid).toMatchObject({ valid: true, user_id: registered.user.id, username: "alice", roles: [], reason: "" })
      expect(ok(yield* call("AuthService", "ValidateToken", { token: "v4.public.garbage" }))).toMatchObject({ valid: false, reason: "malformed" })
      expect(ok(yield* call("AuthService", "ValidateToken", { token: login.token.refresh_token }))).toMatchObject({ valid: false, reason: "wrong_type" })
      expect(code(yield* call("AuthService", "ValidateToken", {}))).toBe("INVALID_ARGUMENT")

      // Management needs a token, then the policy.
      expect(code(yield* call("RoleService", "CreateRole", { name: "editor" }))).toBe("UNAUTHENTICATED")
      expect(code(yield* call("RoleService", "CreateRole", { name: "editor" }, alice))).toBe("PERMISSION_DENIED")
      // grpc-js decodes grpc-message with decodeURI: the server escapes only what the gRPC spec says, so ':' arrives.
      const refused = yield* call("RoleService", "CreateRole", { name: "editor" }, alice)
      expect(!refused.ok && refused.details).toBe("permission denied: ROLE/CREATE is required")
      expect(code(yield* call("AuthService", "GenerateToken", { user_id: registered.user.id }, alice))).toBe("PERMISSION_DENIED")

      yield* bootstrapAdmin({ username: "root", email: "root@example.com", password: Redacted.make("root password") })
      const admin = ok(yield* call("AuthService", "Login", { username: "root", password: "root password" })).token.access_token as string

      const role = ok(yield* call("RoleService", "CreateRole", { name: "editor", description: "edits users" }, admin)).role
      expect(code(yield* call("RoleService", "CreateRole", { name: "editor" }, admin))).toBe("ALREADY_EXISTS")
      expect(code(yield* call("RoleService", "CreateRole", { name: "user:1" }, admin))).toBe("INVALID_ARGUMENT")
      expect(ok(yield* call("RoleService", "ListRoles", {}, admin)).roles.map((r: any) => r.name)).toEqual(["admin", "editor"])
      const permission = ok(yield* call("PermissionService", "CreatePermission",
        { name: "update users", resource: "RESOURCE_TYPE_USER", action: "ACTION_TYPE_UPDATE" }, admin)).permission
      expect(permission).toMatchObject({ resource: "RESOURCE_TYPE_USER", action: "ACTION_TYPE_UPDATE" })
      expect(code(yield* call("PermissionService", "CreatePermission", { name: "no resource", action: "ACTION_TYPE_READ" }, admin)))
        .toBe("INVALID_ARGUMENT")
      expect(ok(yield* call("PermissionService", "ListPermissions", {}, admin)).permissions).toHaveLength(1)
      ok(yield* call("PermissionService", "GrantPermission", { role_id: role.id, permission_id: permission.id }, admin))
      ok(yield* call("PermissionService", "GrantPermission", { role_id: role.id, permission_id: permission.id }, admin))
      expect(ok(yield* call("PermissionService", "ListRolePermissions", { role_id: role.id }, admin)).permissions).toHaveLength(1)
      expect(code(yield* call("PermissionService", "GrantPermission", { role_id: role.id, permission_id: 999 }, admin))).toBe("NOT_FOUND")

      const check = (token: string, action: string, user_id = 0) =>
        Effect.map(call("PermissionService", "CheckPermission", { user_id, resource: "RESOURCE_TYPE_USER", action }, token), (r) => ok(r).allowed)
      expect(yield* check(alice, "ACTION_TYPE_UPDATE")).toBe(false)
      ok(yield* call("RoleService", "AssignRole", { user_id: registered.user.id, role_id: role.id }, admin))
      expect(ok(yield* call("RoleService", "ListUserRoles", {}, alice)).roles.map((r: any) => r.name)).toEqual(["editor"])
      expect(code(yield* call("RoleService", "ListUserRoles", { user_id: 999 }, alice))).toBe("PERMISSION_DENIED")
      expect(code(yield* call("RoleService", "ListUserRoles", { user_id: 999 }, admin))).toBe("NOT_FOUND")
      expect(yield* check(alice, "ACTION_TYPE_UPDATE")).toBe(true)
      expect(yield* check(alice, "ACTION_TYPE_DELETE")).toBe(false)
      expect(yield* check(admin, "ACTION_TYPE_UPDATE", registered.user.id)).toBe(true)
      expect(yield* check(admin, "ACTION_TYPE_UPDATE", 4242)).toBe(false)
      expect(code(yield* call("PermissionService", "CheckPermission",
        { user_id: 4242, resource: "RESOURCE_TYPE_USER", action: "ACTION_TYPE_READ" }, alice))).toBe("PERMISSION_DENIED")

      ok(yield* call("PermissionService", "RevokePermission", { role_id: role.id, permission_id: permission.id }, admin))
      expect(yield* check(alice, "ACTION_TYPE_UPDATE")).toBe(false)
      ok(yield* call("RoleService", "UnassignRole", { user_id: registered.user.id, role_id: role.id }, admin))
      expect(ok(yield* call("RoleService", "ListUserRoles", {}, alice)).roles).toEqual([])
      ok(yield* call("PermissionService", "DeletePermission", { permission_id: permission.id }, admin))
      expect(code(yield* call("PermissionService", "DeletePermission", { permission_id: permission.id }, admin))).toBe("NOT_FOUND")
      ok(yield* call("RoleService", "DeleteRole", { role_id: role.id }, admin))
      expect(code(yield* call("RoleService", "DeleteRole", { role_id: role.id }, admin))).toBe("NOT_FOUND")
      expect(code(yield* call("RoleService", "DeleteRole", {}, admin))).toBe("INVALID_ARGUMENT")

      // GenerateToken: admin only, and never longer than the configured access TTL.
      const minted = ok(yield* call("AuthService", "GenerateToken", { user_id: registered.user.id, ttl_seconds: 60 }, admin)).token
      expect(minted.expires_in).toBe(60)
      expect(ok(yield* call("AuthService", "ValidateToken", { token: minted.access_token }))).toMatchObject({ valid: true, username: "alice" })
      expect(code(yield* call("AuthService", "GenerateToken", { user_id: 4242 }, admin))).toBe("NOT_FOUND")

      // RefreshToken rotates; presenting a spent token revokes the whole family, access tokens included.
      const rotated = ok(yield* call("AuthService", "RefreshToken", { refresh_token: login.token.refresh_token })).token
      expect(rotated.refresh_token).not.toBe(login.token.refresh_token)
      const again = ok(yield* call("AuthService", "RefreshToken", { refresh_token: rotated.refresh_token })).token
      expect(code(yield* call("AuthService", "RefreshToken", { refresh_token: login.token.refresh_token }))).toBe("UNAUTHENTICATED")
      expect(code(yield* call("AuthService", "RefreshToken", { refresh_token: again.refresh_token }))).toBe("UNAUTHENTICATED")
      expect(ok(yield* call("AuthService", "ValidateToken", { token: again.access_token }))).toMatchObject({ valid: false, reason: "revoked" })
      expect(code(yield* call("AuthService", "RefreshToken", { refresh_token: "" }))).toBe("INVALID_ARGUMENT")

      // Logout revokes the access token and its session; it is idempotent while the token has not expired.
      const session = ok(yield* call("AuthService", "Login", { username: "alice", password: "correct horse" })).token
      expect(ok(yield* call("AuthService", "Logout", {}, session.access_token))).toEqual({ success: true })
      expect(ok(yield* call("AuthService", "ValidateToken", { token: session.access_token }))).toMatchObject({ valid: false, reason: "revoked" })
      expect(code(yield* call("AuthService", "RefreshToken", { refresh_token: session.refresh_token }))).toBe("UNAUTHENTICATED")
      ok(yield* call("AuthService", "Logout", { access_token: session.access_token }))
      expect(code(yield* call("AuthService", "Logout", {}))).toBe("UNAUTHENTICATED")
      expect(code(yield* call("RoleService", "ListRoles", {}, session.access_token))).toBe("UNAUTHENTICATED")
    }).pipe(Effect.scoped))

  it.scoped("Logout with all_sessions revokes every sign-in of the user, access and refresh tokens alike", () =>
    Effect.gen(function*() {
      const { grpc: address } = yield* IamEndpoints
      const client = grpcClients(address)
      yield* Effect.addFinalizer(() => Effect.sync(client.close))
      const call = (...args: Parameters<typeof client.call>) => Effect.promise(() => client.call(...args))
      ok(yield* call("AuthService", "Register", { username: "many", password: "many sessions", email: "many@example.com" }))
      const sessions = [
        ok(yield* call("AuthService", "Login", { username: "many", password: "many sessions" })).token,
        ok(yield* call("AuthService", "Login", { username: "many", password: "many sessions" })).token,
        ok(yield* call("AuthService", "Login", { email: "many@example.com", password: "many sessions" })).token
      ]
      expect(ok(yield* call("AuthService", "Logout", { all_sessions: true }, sessions[0].access_token))).toEqual({ success: true })
      for (const session of sessions) {
        expect(ok(yield* call("AuthService", "ValidateToken", { token: session.access_token }))).toMatchObject({ valid: false, reason: "revoked" })
        expect(code(yield* call("AuthService", "RefreshToken", { refresh_token: session.refresh_token }))).toBe("UNAUTHENTICATED")
      }
    }))
})
