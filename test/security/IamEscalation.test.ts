/**
 * Issue 22, "Nobody gets in where they do not belong": the IAM escalations an adversarial probe found, each tried
 * through real clients against a running server. A permission that lets its holder change roles, permissions or
 * tokens must not be worth more than what its holder already holds:
 * - ROLE/UPDATE alone: assigning oneself the admin role, removing the admins;
 * - PERMISSION/UPDATE alone: granting one's own role anything (a wildcard included);
 * - TOKEN/CREATE alone: minting a token for the admin.
 * The admin role always keeps a holder, even under two concurrent removals. Usernames differing only in case are
 * one name. Login is throttled per account and per client, across instances. Refusals carry the same code over
 * gRPC, Connect and REST.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect"
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node"
import { create } from "@bufbuild/protobuf"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import { expect, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Redacted, TestClock } from "effect"
import { AuthService, LoginRequestSchema, PermissionService, RoleService } from "../../src/gen/gatehouse/iam/v1/iam_pb.js"
import { LAST_ADMIN } from "../../src/iam/access/Roles.js"
import { bootstrapAdmin } from "../../src/iam/BootstrapAdmin.js"
import { IamRpcs } from "../../src/iam/rpc/IamRpcs.js"
import { IAM_RPC_PATH } from "../../src/iam/rpc/IamRpcRoutes.js"
import { grpc, grpcClients, type Reply } from "../iam/support/GrpcJs.js"
import { IamEndpoints, IamTestServer, IamTestServerOver } from "../iam/support/IamTestServer.js"

const ok = (reply: Reply): any => {
  if (!reply.ok) expect.fail(`expected OK, got ${grpc.status[reply.code]}: ${reply.details}`)
  return reply.value
}
const refusal = (reply: Reply) => (reply.ok ? { code: "OK", details: "" } : { code: grpc.status[reply.code], details: reply.details })

const denied = (what: string, deed: string) => ({
  code: "PERMISSION_DENIED",
  details: `permission denied: you do not hold ${what}, so you cannot ${deed}`
})

/** The test's clients and the accounts it sets up: an admin, and users each holding one permission through a role. */
const Setup = Effect.gen(function*() {
  const { grpc: address, http } = yield* IamEndpoints
  const client = grpcClients(address)
  yield* Effect.addFinalizer(() => Effect.sync(client.close))
  const call = (...args: Parameters<typeof client.call>) => Effect.promise(() => client.call(...args))
  const login = (username: string, password: string) =>
    Effect.map(call("AuthService", "Login", { username, password }), (reply) => ok(reply).token.access_token as string)

  const { userId: adminId } = yield* bootstrapAdmin({ username: "iamadmin", email: "iamadmin@example.com", password: Redacted.make("admin password") })
  const admin = yield* login("iamadmin", "admin password")
  const roles = ok(yield* call("RoleService", "ListRoles", {}, admin)).roles as Array<{ id: number; name: string }>
  const adminRole = roles.find((r) => r.name === "admin")!.id

  /** The permission named RESOURCE/ACTION, made the first time a test of this file asks for it. */
  const permission = (resource: string, action: string) =>
    Effect.gen(function*() {
      const name = `${resource}/${action}`
      const known = (ok(yield* call("PermissionService", "ListPermissions", {}, admin)).permissions as Array<{ id: number; name: string }>)
        .find((p) => p.name === name)
      return known?.id ?? ok(yield* call("PermissionService", "CreatePermission",
        { name, resource: `RESOURCE_TYPE_${resource}`, action: `ACTION_TYPE_${action}` }, admin)).permission.id as number
    })
  /** A user whose one role holds exactly `grants`, signed in. */
  const userHolding = (name: string, grants: ReadonlyArray<readonly [string, string]>) =>
    Effect.gen(function*() {
      const user = ok(yield* call("AuthService", "Register", { username: name, password: `${name} password`, email: `${name}@example.com` })).user
      const role = ok(yield* call("RoleService", "CreateRole", { name: `${name}-role` }, admin)).role.id as number
      for (const [resource, action] of grants) {
        ok(yield* call("PermissionService", "GrantPermission", { role_id: role, permission_id: yield* permission(resource, action) }, admin))
      }
      ok(yield* call("RoleService", "AssignRole", { user_id: user.id, role_id: role }, admin))
      return { id: user.id as number, role, token: yield* login(name, `${name} password`) }
    })
  const connect = (token: string) => {
    const headers = { authorization: `Bearer ${token}` }
    const transports = [createGrpcTransport({ baseUrl: `http://${address}` }), createConnectTransport({ baseUrl: `http://${address}`, httpVersion: "1.1" })]
    return transports.map((transport) => ({
      roles: createClient(RoleService, transport),
      permissions: createClient(PermissionService, transport),
      auth: createClient(AuthService, transport),
      headers
    }))
  }
  const rest = (method: string, path: string, token: string, body?: unknown) =>
    Effect.promise(() =>
      fetch(`${http}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      }).then(async (r) => ({ status: r.status, body: await r.json() as { code?: string; message?: string } })))
  const connectCode = (f: () => Promise<unknown>) =>
    Effect.promise(() => f().then(() => "OK", (e: unknown) => Code[ConnectError.from(e).code]))
  return { call, login, admin, adminId, adminRole, permission, userHolding, connect, rest, connectCode }
})

layer(IamTestServer(), { timeout: 120_000 })("IAM escalations, through real clients", (it) => {
  it.scoped("ROLE/UPDATE alone: no admin role for oneself, no removing the admins; the last admin stays, over every transport", () =>
    Effect.gen(function*() {
      const { adminId, adminRole, call, connect, connectCode, rest, userHolding } = yield* Setup
      const mallory = yield* userHolding("role-updater", [["ROLE", "UPDATE"]])

      expect(refusal(yield* call("RoleService", "AssignRole", { user_id: mallory.id, role_id: adminRole }, mallory.token)))
        .toEqual(denied(`role ${adminRole}`, "assign it"))
      expect(refusal(yield* call("RoleService", "UnassignRole", { user_id: adminId, role_id: adminRole }, mallory.token)))
        .toEqual(denied(`role ${adminRole}`, "remove it"))
      // The same refusal on Connect (gRPC and Connect protocols) and REST.
      for (const client of connect(mallory.token)) {
        expect(yield* connectCode(() => client.roles.assignRole({ userId: mallory.id, roleId: adminRole }, { headers: client.headers })))
          .toBe("PermissionDenied")
        expect(yield* connectCode(() => client.roles.unassignRole({ userId: adminId, roleId: adminRole }, { headers: client.headers })))
          .toBe("PermissionDenied")
      }
      const restAssign = yield* rest("POST", `/auth/users/${mallory.id}/roles`, mallory.token, { role_id: adminRole })
      expect(restAssign).toEqual({ status: 403, body: { code: "permission_denied", message: denied(`role ${adminRole}`, "assign it").details } })
      expect((yield* rest("DELETE", `/auth/users/${adminId}/roles/${adminRole}`, mallory.token)).status).toBe(403)

      // Nothing changed: she holds what she held, the admin is still the admin.
      expect(ok(yield* call("RoleService", "ListUserRoles", { user_id: 0 }, mallory.token)).roles.map((r: any) => r.id)).toEqual([mallory.role])
      expect(ok(yield* call("PermissionService", "CheckPermission", { resource: "RESOURCE_TYPE_ROLE", action: "ACTION_TYPE_CREATE" }, mallory.token)))
        .toEqual({ allowed: false })
      // What she does hold she may pass on (the rule refuses only what she lacks).
      const friend = ok(yield* call("AuthService", "Register", { username: "friend", password: "friend password", email: "friend@example.com" })).user.id
      ok(yield* call("RoleService", "AssignRole", { user_id: friend, role_id: mallory.role }, mallory.token))
      ok(yield* call("RoleService", "UnassignRole", { user_id: friend, role_id: mallory.role }, mallory.token))
    }))

  it.scoped("the last holder of the admin role cannot be removed, by unassigning or deleting the role; two concurrent removals of the last two admins never both succeed", () =>
    Effect.gen(function*() {
      const { admin, adminId, adminRole, call, connect, connectCode, login, rest } = yield* Setup
      const lastAdmin = { code: "FAILED_PRECONDITION", details: LAST_ADMIN }
      expect(refusal(yield* call("RoleService", "UnassignRole", { user_id: adminId, role_id: adminRole }, admin))).toEqual(lastAdmin)
      expect(refusal(yield* call("RoleService", "DeleteRole", { role_id: adminRole }, admin))).toEqual(lastAdmin)
      for (const client of connect(admin)) {
        expect(yield* connectCode(() => client.roles.unassignRole({ userId: adminId, roleId: adminRole }, { headers: client.headers })))
          .toBe("FailedPrecondition")
      }
      expect(yield* rest("DELETE", `/auth/roles/${adminRole}`, admin)).toEqual({ status: 400, body: { code: "failed_precondition", message: LAST_ADMIN } })

      // A second admin; then, round after round, both step down at the same moment: one of them must stay.
      const second = ok(yield* call("AuthService", "Register", { username: "second-admin", password: "second password", email: "second@example.com" })).user.id as number
      const tokens = new Map([[adminId, admin]])
      let holder = adminId
      for (let round = 0; round < 6; round++) {
        const other = holder === adminId ? second : adminId
        ok(yield* call("RoleService", "AssignRole", { user_id: other, role_id: adminRole }, tokens.get(holder)!))
        if (!tokens.has(other)) tokens.set(other, yield* login("second-admin", "second password"))
        const stepDown = (id: number) => call("RoleService", "UnassignRole", { user_id: id, role_id: adminRole }, tokens.get(id)!)
        const [mine, theirs] = yield* Effect.all([stepDown(holder), stepDown(other)], { concurrency: 2 })
        expect([refusal(mine), refusal(theirs)].sort((x, y) => x.code.localeCompare(y.code)), `round ${round}`)
          .toEqual([lastAdmin, { code: "OK", details: "" }])
        const stayed = mine.ok ? other : holder
        expect(ok(yield* call("RoleService", "ListUserRoles", { user_id: 0 }, tokens.get(stayed)!)).roles.map((r: any) => r.id), `round ${round}`)
          .toContain(adminRole)
        expect(ok(yield* call("RoleService", "ListUserRoles", { user_id: stayed === adminId ? second : adminId }, tokens.get(stayed)!)).roles, `round ${round}`)
          .toEqual([])
        holder = stayed
      }
    }))

  it.scoped("PERMISSION/UPDATE alone: nothing she lacks can be granted to her role, nor a wildcard", () =>
    Effect.gen(function*() {
      const { admin, call, connect, connectCode, permission, rest, userHolding } = yield* Setup
      const mallory = yield* userHolding("permission-updater", [["PERMISSION", "UPDATE"]])
      const lacking = [["USER", "DELETE"], ["TOKEN", "CREATE"], ["ROLE", "UPDATE"], ["PERMISSION", "CREATE"], ["ORDER", "READ"]] as const
      for (const [resource, action] of lacking) {
        const id = yield* permission(resource, action)
        expect(refusal(yield* call("PermissionService", "GrantPermission", { role_id: mallory.role, permission_id: id }, mallory.token)))
          .toEqual(denied(`permission ${id}`, "grant it"))
      }
      const deleteUsers = yield* permission("USER", "DELETE")
      for (const client of connect(mallory.token)) {
        expect(yield* connectCode(() => client.permissions.grantPermission({ roleId: mallory.role, permissionId: deleteUsers }, { headers: client.headers })))
          .toBe("PermissionDenied")
      }
      expect((yield* rest("POST", `/auth/roles/${mallory.role}/permissions`, mallory.token, { permission_id: deleteUsers })).status).toBe(403)
      // An id that names no permission is refused the same way: she learns nothing about which ids exist.
      expect(refusal(yield* call("PermissionService", "GrantPermission", { role_id: mallory.role, permission_id: 99_999 }, mallory.token)))
        .toEqual(denied("permission 99999", "grant it"))
      // A wildcard cannot even be written down: the contract's enums have no "*", whoever asks.
      expect((yield* rest("POST", "/auth/permissions", admin, { name: "everything", resource: "*", action: "*" })).status).toBe(400)
      expect(refusal(yield* call("PermissionService", "CreatePermission", { name: "everything", resource: "*", action: "*" }, admin)).code)
        .toBe("INVALID_ARGUMENT")

      for (const [resource, action] of lacking) {
        expect(ok(yield* call("PermissionService", "CheckPermission",
          { resource: `RESOURCE_TYPE_${resource}`, action: `ACTION_TYPE_${action}` }, mallory.token))).toEqual({ allowed: false })
      }
      // What she holds she may grant, to her role or another.
      ok(yield* call("PermissionService", "GrantPermission", { role_id: mallory.role, permission_id: yield* permission("PERMISSION", "UPDATE") }, mallory.token))
    }))

  it.scoped("IAMADMIN beside iamadmin is refused on every transport; either spelling signs in to the one account", () =>
    Effect.gen(function*() {
      const { adminId, call, connectCode } = yield* Setup
      const { grpc: address, http } = yield* IamEndpoints
      for (const username of ["IAMADMIN", "IamAdmin", "iamADMIN"]) {
        expect(refusal(yield* call("AuthService", "Register", { username, password: "impostor password", email: `${username}-x@example.com` })))
          .toEqual({ code: "ALREADY_EXISTS", details: "username or email is already registered" })
      }
      const auth = createClient(AuthService, createConnectTransport({ baseUrl: `http://${address}`, httpVersion: "1.1" }))
      expect(yield* connectCode(() => auth.register({ username: "IAMADMIN", password: "impostor password", email: "impostor@example.com" })))
        .toBe("AlreadyExists")
      const viaRest = yield* Effect.promise(() => fetch(`${http}/auth/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ username: "IAMADMIN", password: "impostor password", email: "impostor@example.com" })
      }))
      expect(viaRest.status).toBe(409)

      for (const username of ["IAMADMIN", "iamadmin", "IamAdmin"]) {
        const signedIn = ok(yield* call("AuthService", "Login", { username, password: "admin password" }))
        expect(signedIn.user).toMatchObject({ id: adminId, username: "iamadmin" })
      }
      expect(refusal(yield* call("AuthService", "Login", { username: "IAMADMIN", password: "impostor password" })).code).toBe("UNAUTHENTICATED")
    }))

  it.scoped("TOKEN/CREATE alone: no token for the admin, nor for anyone who holds more; for those who hold no more, yes", () =>
    Effect.gen(function*() {
      const { admin, adminId, call, connect, connectCode, rest, userHolding } = yield* Setup
      const minter = yield* userHolding("minter", [["TOKEN", "CREATE"]])
      const reader = yield* userHolding("reader", [["USER", "READ"]])
      const peer = yield* userHolding("minter-peer", [["TOKEN", "CREATE"]])
      const nobody = ok(yield* call("AuthService", "Register", { username: "nobody-much", password: "nobody password", email: "nobody@example.com" })).user.id

      const mint = (userId: number, token: string) => call("AuthService", "GenerateToken", { user_id: userId }, token)
      expect(refusal(yield* mint(adminId, minter.token))).toEqual(denied(`every permission user ${adminId} holds`, "mint a token for them"))
      expect(refusal(yield* mint(reader.id, minter.token))).toEqual(denied(`every permission user ${reader.id} holds`, "mint a token for them"))
      for (const client of connect(minter.token)) {
        expect(yield* connectCode(() => client.auth.generateToken({ userId: adminId }, { headers: client.headers }))).toBe("PermissionDenied")
      }
      expect((yield* rest("POST", "/auth/token", minter.token, { user_id: adminId })).status).toBe(403)

      for (const userId of [minter.id, peer.id, nobody]) {
        const minted = ok(yield* mint(userId, minter.token)).token.access_token
        expect(ok(yield* call("AuthService", "ValidateToken", { token: minted })).user_id).toBe(userId)
      }
      // An admin may mint for anyone.
      ok(yield* mint(reader.id, admin))
    }))
})

/*
 * Login throttling. The server's clock is the test's (TestClock): waits are passed by moving it, never by sleeping,
 * and the assertions are on the refusals and their retry hints. Clients are told apart by the RATE_LIMIT_HEADER
 * value, as behind a proxy.
 */
const THROTTLE_ENV = {
  AUTH_RATE_LIMIT_HEADER: "X-Client-Key",
  AUTH_IAM_LOGIN_BACKOFF_MAX: "1m",
  AUTH_IAM_LOGIN_CLIENT_FAILURES: "10",
  AUTH_IAM_LOGIN_CLIENT_PERIOD: "10m"
}

const Throttled = Effect.gen(function*() {
  const { grpc: address, http } = yield* IamEndpoints
  const client = grpcClients(address)
  yield* Effect.addFinalizer(() => Effect.sync(client.close))
  const register = (username: string) =>
    Effect.map(Effect.promise(() =>
      client.call("AuthService", "Register", { username, password: `${username} password`, email: `${username}@example.com` })), ok)
  /** A gRPC Login from client `from`: its code and, when refused, the retry-after metadata. */
  const grpcLogin = (endpoint: string, from: string, identifier: Record<string, string>, password: string) =>
    Effect.promise(async () => {
      const c = endpoint === address ? client : grpcClients(endpoint)
      const reply = await c.call("AuthService", "Login", { ...identifier, password }, undefined, { "x-client-key": from })
      if (c !== client) c.close()
      return reply.ok ? { code: "OK" } : { code: grpc.status[reply.code], retryAfter: reply.metadata["retry-after"], details: reply.details }
    })
  const restLogin = (base: string, from: string, body: Record<string, string>) =>
    Effect.promise(() =>
      fetch(`${base}/auth/login`, { method: "POST", headers: { "content-type": "application/json", "x-client-key": from }, body: JSON.stringify(body) })
        .then(async (r) => ({ status: r.status, retryAfter: r.headers.get("retry-after"), body: await r.json() as { code?: string; message?: string } })))
  return { address, http, register, grpcLogin, restLogin }
})

const wrong = "not the password"

layer(IamTestServer(THROTTLE_ENV), { timeout: 120_000 })("IAM login throttling", (it) => {
  it.scoped("per account: five failures, then 1 s, 2 s, 4 s … up to the cap; the right password waits too; a success resets; never locked for good", () =>
    Effect.gen(function*() {
      const { address, grpcLogin, http, register, restLogin } = yield* Throttled
      yield* register("victim")
      const right = "victim password"
      // Every attempt from another client: it is the account that is throttled.
      let n = 0
      const from = () => `10.1.0.${n++}`
      for (let i = 0; i < 5; i++) expect((yield* grpcLogin(address, from(), { username: "victim" }, wrong)).code).toBe("UNAUTHENTICATED")

      const waiting = { code: "RESOURCE_EXHAUSTED", retryAfter: "1", details: "too many failed logins: try again in 1s" }
      expect(yield* grpcLogin(address, from(), { username: "victim" }, right)).toEqual(waiting)
      expect(yield* grpcLogin(address, from(), { username: "VICTIM" }, right)).toEqual(waiting)
      expect(yield* grpcLogin(address, from(), { email: "victim@example.com" }, right)).toEqual(waiting)
      expect(yield* restLogin(http, from(), { username: "victim", password: right })).toEqual({
        status: 429, retryAfter: "1", body: { code: "resource_exhausted", message: "too many failed logins: try again in 1s" }
      })
      const connect = createClient(AuthService, createConnectTransport({ baseUrl: `http://${address}`, httpVersion: "1.1" }))
      const connectRefusal = yield* Effect.promise(() =>
        connect.login({ identifier: { case: "username", value: "victim" }, password: right }, { headers: { "x-client-key": from() } })
          .then(() => undefined, (e: unknown) => ConnectError.from(e)))
      expect([connectRefusal && Code[connectRefusal.code], connectRefusal?.metadata.get("retry-after")]).toEqual(["ResourceExhausted", "1"])

      // Waited out, each failure doubles the next wait, up to the cap (1 minute here): a backoff, not a lockout.
      const hints: Array<string | undefined> = []
      let wait = 1
      for (let i = 0; i < 8; i++) {
        yield* TestClock.adjust(Duration.seconds(wait))
        expect((yield* grpcLogin(address, from(), { username: "victim" }, wrong)).code).toBe("UNAUTHENTICATED")
        const refused = yield* grpcLogin(address, from(), { username: "victim" }, right)
        expect(refused.code).toBe("RESOURCE_EXHAUSTED")
        hints.push(refused.retryAfter)
        wait = Number(refused.retryAfter)
      }
      expect(hints).toEqual(["2", "4", "8", "16", "32", "60", "60", "60"])
      // One second early the right password is still refused; once the wait has passed it signs in.
      yield* TestClock.adjust(Duration.seconds(59))
      expect((yield* grpcLogin(address, from(), { username: "victim" }, right)).code).toBe("RESOURCE_EXHAUSTED")
      yield* TestClock.adjust(Duration.seconds(1))
      expect((yield* grpcLogin(address, from(), { username: "victim" }, right)).code).toBe("OK")
      // The success forgot the failures: five free ones again.
      for (let i = 0; i < 5; i++) expect((yield* restLogin(http, from(), { username: "victim", password: wrong })).status).toBe(401)
      expect(yield* restLogin(http, from(), { username: "victim", password: right })).toMatchObject({ status: 429, retryAfter: "1" })

      // A name no account has is throttled exactly the same: the throttle does not tell which names exist.
      for (let i = 0; i < 5; i++) expect((yield* grpcLogin(address, from(), { username: "no-such-user" }, wrong)).code).toBe("UNAUTHENTICATED")
      expect(yield* grpcLogin(address, from(), { username: "no-such-user" }, wrong)).toEqual(waiting)
    }))

  it.scoped("per client: a bucket of failures across accounts and transports; then even a right password waits; other clients and successes are not counted", () =>
    Effect.gen(function*() {
      const { address, grpcLogin, http, register, restLogin } = yield* Throttled
      yield* register("bystander")
      const right = "bystander password"
      const guesser = "198.51.100.20"
      // Ten failures, each against another name (so no account is held back), over gRPC and REST alike.
      for (let i = 0; i < 10; i++) {
        const failed = i % 2 === 0
          ? (yield* grpcLogin(address, guesser, { username: `sprayed-${i}` }, wrong)).code
          : (yield* restLogin(http, guesser, { username: `sprayed-${i}`, password: wrong })).status
        expect(failed).toBe(i % 2 === 0 ? "UNAUTHENTICATED" : 401)
      }
      // The bucket is empty: one failure back every 60 s (10 per 10 minutes). A right password waits too.
      expect(yield* grpcLogin(address, guesser, { username: "bystander" }, right))
        .toEqual({ code: "RESOURCE_EXHAUSTED", retryAfter: "60", details: "too many failed logins: try again in 60s" })
      expect(yield* restLogin(http, guesser, { username: "bystander", password: right })).toMatchObject({ status: 429, retryAfter: "60" })
      // Another client is not held back, and the refused attempts did not count against the bystander's account.
      expect((yield* grpcLogin(address, "198.51.100.21", { username: "bystander" }, right)).code).toBe("OK")
      for (let i = 0; i < 5; i++) expect((yield* grpcLogin(address, `198.51.100.${30 + i}`, { username: "bystander" }, wrong)).code).toBe("UNAUTHENTICATED")
      yield* TestClock.adjust(Duration.seconds(60))
      // One failure's worth came back, and only one.
      expect((yield* grpcLogin(address, guesser, { username: "sprayed-again" }, wrong)).code).toBe("UNAUTHENTICATED")
      expect((yield* grpcLogin(address, guesser, { username: "sprayed-more" }, wrong)).code).toBe("RESOURCE_EXHAUSTED")

      // The @effect/rpc group names the client from the HTTP request: a header inside the RPC message, which a proxy
      // never sees, does not make the guesser a new client.
      const rpc = yield* RpcClient.make(IamRpcs).pipe(Effect.provide(RpcClient.layerProtocolHttp({
        url: `${http}${IAM_RPC_PATH}`,
        transformClient: HttpClient.mapRequest(HttpClientRequest.setHeader("x-client-key", guesser))
      }).pipe(Layer.provide(FetchHttpClient.layer), Layer.provide(RpcSerialization.layerNdjson))))
      const viaRpc = yield* Effect.flip(rpc.Login(create(LoginRequestSchema, { identifier: { case: "username", value: "bystander" }, password: right }))
        .pipe(RpcClient.withHeaders({ "x-client-key": "203.0.113.250" })))
      expect(viaRpc).toMatchObject({ _tag: "IamError", code: "resource_exhausted", retryAfter: 60 })

      // Successes cost nothing: more sign-ins from one client than its bucket holds.
      yield* register("regular")
      for (let i = 0; i < 15; i++) expect((yield* grpcLogin(address, "198.51.100.40", { username: "regular" }, "regular password")).code).toBe("OK")
    }))

  it.scoped("two instances over one database count one account's and one client's failures together; guesses sent at once get only the free ones", () =>
    Effect.gen(function*() {
      const { address, grpcLogin, http, register, restLogin } = yield* Throttled
      const other = Context.get(yield* Layer.build(Layer.fresh(IamTestServerOver(THROTTLE_ENV))), IamEndpoints)
      expect(other.grpc).not.toBe(address)
      const instances = [{ grpc: address, http }, other]
      yield* register("shared")
      for (let i = 0; i < 5; i++) {
        expect((yield* grpcLogin(instances[i % 2]!.grpc, `10.2.0.${i}`, { username: "shared" }, wrong)).code).toBe("UNAUTHENTICATED")
      }
      expect(yield* grpcLogin(other.grpc, "10.2.0.9", { username: "shared" }, "shared password")).toMatchObject({ code: "RESOURCE_EXHAUSTED", retryAfter: "1" })
      expect(yield* restLogin(http, "10.2.0.10", { username: "shared", password: "shared password" })).toMatchObject({ status: 429, retryAfter: "1" })

      // One client's failures, spread over both instances.
      for (let i = 0; i < 10; i++) {
        expect((yield* restLogin(instances[i % 2]!.http, "192.0.2.50", { username: `spread-${i}`, password: wrong })).status).toBe(401)
      }
      for (const instance of instances) {
        expect(yield* restLogin(instance.http, "192.0.2.50", { username: "spread-x", password: wrong })).toMatchObject({ status: 429, retryAfter: "60" })
      }

      // Twenty guesses at one account at the same moment, half on each instance, each from its own client: the
      // five free ones are checked, the rest refused before any password is.
      yield* register("stormed")
      const storm = yield* Effect.all(Array.from({ length: 20 }, (_, i) =>
        grpcLogin(instances[i % 2]!.grpc, `10.3.0.${i}`, { username: "stormed" }, wrong)), { concurrency: "unbounded" })
      expect(storm.filter((r) => r.code === "UNAUTHENTICATED")).toHaveLength(5)
      expect(storm.filter((r) => r.code === "RESOURCE_EXHAUSTED")).toHaveLength(15)
    }))
})
