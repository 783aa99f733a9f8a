import { fileURLToPath } from "node:url"
import { create } from "@bufbuild/protobuf"
import { Code, ConnectError, createClient } from "@connectrpc/connect"
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node"
import { FetchHttpClient } from "@effect/platform"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import { expect, layer } from "@effect/vitest"
import * as protoLoader from "@grpc/proto-loader"
import { Effect, Layer, Redacted } from "effect"
import {
  AuthService, CreateRoleRequestSchema, LoginRequestSchema, RegisterRequestSchema, RoleService, ValidateTokenRequestSchema
} from "../../src/gen/gatehouse/iam/v1/iam_pb.js"
import { bootstrapAdmin } from "../../src/iam/BootstrapAdmin.js"
import { IamError } from "../../src/iam/domain/IamError.js"
import { IamRpcs } from "../../src/iam/rpc/IamRpcs.js"
import { IAM_RPC_PATH } from "../../src/iam/rpc/IamRpcRoutes.js"
import { TEST_SIGNING_KEY } from "./support/IamTestServer.js"
import { grpc } from "./support/GrpcJs.js"
import { IamEndpoints, IamTestServer } from "./support/IamTestServer.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)
const connectCode = (f: () => Promise<unknown>) =>
  Effect.promise(() => f().then(() => "OK", (e: unknown) => Code[ConnectError.from(e).code]))

const post = (url: string, body: unknown, token?: string) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })

layer(IamTestServer(), { timeout: 120_000 })("IAM transports", (it) => {
  it.effect("the generated Connect client works over gRPC, gRPC-Web and Connect on the gRPC port", () =>
    Effect.gen(function*() {
      const { grpc: address } = yield* IamEndpoints
      const baseUrl = `http://${address}`
      const transports = {
        grpc: createGrpcTransport({ baseUrl }),
        grpcWebH2: createGrpcWebTransport({ baseUrl, httpVersion: "2" }),
        grpcWebH1: createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
        connectH1: createConnectTransport({ baseUrl, httpVersion: "1.1" })
      }
      for (const [name, transport] of Object.entries(transports)) {
        const auth = createClient(AuthService, transport)
        const registered = yield* promise(() =>
          auth.register({ username: `connect-${name}`, password: "password one", email: `${name}@example.com` }))
        expect(registered.user?.username).toBe(`connect-${name}`)
        const validated = yield* promise(() => auth.validateToken({ token: registered.token!.accessToken }))
        expect(validated.valid).toBe(true)
        expect(yield* connectCode(() => auth.login({ identifier: { case: "username", value: `connect-${name}` }, password: "nope nope" })))
          .toBe("Unauthenticated")
        const roles = createClient(RoleService, transport)
        expect(yield* connectCode(() =>
          roles.createRole({ name: "x" }, { headers: { authorization: `Bearer ${registered.token!.accessToken}` } })))
          .toBe("PermissionDenied")
      }
    }))

  it.effect("REST mirrors every RPC under /auth with JSON bodies, snake_case output and HTTP statuses", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      const register = yield* promise(() => post(`${http}/auth/register`, { username: "rest", password: "rest password", email: "rest@example.com" }))
      expect(register.status).toBe(200)
      const body = yield* promise(() => register.json() as Promise<any>)
      expect(body.user).toMatchObject({ username: "rest", email: "rest@example.com" })
      expect(Object.keys(body.token)).toEqual(expect.arrayContaining(["access_token", "refresh_token", "token_type", "expires_in"]))
      expect(JSON.stringify(body)).not.toContain("password")
      const again = yield* promise(() => post(`${http}/auth/register`, { username: "rest", password: "rest password", email: "x@example.com" }))
      expect(again.status).toBe(409)
      expect(yield* promise(() => again.json())).toEqual({ code: "already_exists", message: "username or email is already registered" })

      const statuses = yield* Effect.forEach([
        post(`${http}/auth/register`, "{not json"),
        post(`${http}/auth/register`, { username: 5, password: "secret-value-123", email: "a@b.c" }),
        post(`${http}/auth/register`, { username: "u", password: "secret-value-123", email: "a@b.c", extra: 1 }),
        post(`${http}/auth/login`, { username: "rest", password: "wrong password" }),
        post(`${http}/auth/roles`, { name: "x" }),
        post(`${http}/auth/roles`, { name: "x" }, body.token.access_token),
        // A guarded route checks the credentials before the path: a malformed id is 401 without them, 400 with them.
        fetch(`${http}/auth/roles/abc`, { method: "DELETE" }),
        fetch(`${http}/auth/roles/abc`, { method: "DELETE", headers: { authorization: `Bearer ${body.token.access_token}` } }),
        post(`${http}/auth/register`, { username: "u".repeat(101), password: "secret-value-123", email: "a@b.c" }),
        // Only an absent body is the default message: whitespace is not JSON.
        post(`${http}/auth/validate`, " ", body.token.access_token),
        post(`${http}/auth/validate`, "", body.token.access_token)
      ], (request) => promise(() => request.then(async (r) => ({ status: r.status, text: await r.text() }))))
      expect(statuses.map((s) => s.status)).toEqual([400, 400, 400, 401, 401, 403, 401, 400, 400, 400, 200])
      for (const s of statuses) expect(s.text).not.toContain("secret-value-123")
      // An id longer than the router reads matches no route: still IAM's path, so IAM's envelope.
      const longId = yield* promise(() => fetch(`${http}/auth/permissions/${"1".repeat(101)}`, { method: "DELETE" }))
      expect(longId.status).toBe(404)
      expect(yield* promise(() => longId.json())).toEqual({ code: "not_found", message: "not found" })

      const validate = yield* promise(() =>
        fetch(`${http}/auth/validate`, { headers: { authorization: `Bearer ${body.token.access_token}` } }).then((r) => r.json() as Promise<any>))
      expect(validate).toMatchObject({ valid: true, username: "rest", reason: "" })
      const refreshed = yield* promise(() => post(`${http}/auth/refresh`, { refresh_token: body.token.refresh_token }).then((r) => r.json() as Promise<any>))
      expect(refreshed.token.access_token).toMatch(/^v4\.public\./)
      const myRoles = yield* promise(() => fetch(`${http}/auth/users/me/roles`, { headers: { authorization: `Bearer ${refreshed.token.access_token}` } }))
      expect(myRoles.status).toBe(200)
      expect(yield* promise(() => myRoles.json())).toEqual({ roles: [] })
      const check = yield* promise(() =>
        post(`${http}/auth/permissions/check`, { resource: "USER", action: "READ" }, refreshed.token.access_token).then((r) => r.json()))
      expect(check).toEqual({ allowed: false })

      yield* bootstrapAdmin({ username: "rest-admin", email: "rest-admin@example.com", password: Redacted.make("admin password") })
      const admin = yield* promise(() => post(`${http}/auth/login`, { email: "rest-admin@example.com", password: "admin password" }).then((r) => r.json() as Promise<any>))
      const token = admin.token.access_token as string
      const role = yield* promise(() => post(`${http}/auth/roles`, { name: "viewer" }, token).then((r) => r.json() as Promise<any>))
      const permission = yield* promise(() =>
        post(`${http}/auth/permissions`, { name: "read users", resource: "RESOURCE_TYPE_USER", action: "READ" }, token).then((r) => r.json() as Promise<any>))
      expect(permission.permission).toMatchObject({ resource: "RESOURCE_TYPE_USER", action: "ACTION_TYPE_READ" })
      expect((yield* promise(() => post(`${http}/auth/roles/${role.role.id}/permissions`, { permission_id: permission.permission.id }, token))).status).toBe(200)
      expect((yield* promise(() => post(`${http}/auth/users/${body.user.id}/roles`, { role_id: role.role.id }, token))).status).toBe(200)
      const allowed = yield* promise(() =>
        post(`${http}/auth/permissions/check`, { user_id: body.user.id, resource: "USER", action: "READ" }, token).then((r) => r.json()))
      expect(allowed).toEqual({ allowed: true })
      const keys = yield* promise(() => fetch(`${http}/auth/keys`).then((r) => r.json()))
      expect(keys).toEqual({ keys: [{ kid: "test-key", version: "v4", purpose: "public", paserk: TEST_SIGNING_KEY.public }] })
      const logout = yield* promise(() => post(`${http}/auth/logout`, {}, refreshed.token.access_token))
      expect(yield* promise(() => logout.json())).toEqual({ success: true })
    }))

  it.effect("the @effect/rpc group has a typed client derived from the schema", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      const client = yield* RpcClient.make(IamRpcs).pipe(
        Effect.provide(RpcClient.layerProtocolHttp({ url: `${http}${IAM_RPC_PATH}` }).pipe(
          Layer.provide(FetchHttpClient.layer),
          Layer.provide(RpcSerialization.layerNdjson)
        ))
      )
      const registered = yield* client.Register(create(RegisterRequestSchema, { username: "effect", password: "effect password", email: "effect@example.com" }))
      expect(registered.user?.username).toBe("effect")
      const failed = yield* Effect.flip(client.Login(create(LoginRequestSchema, { identifier: { case: "username", value: "effect" }, password: "bad password" })))
      expect(failed).toBeInstanceOf(IamError)
      expect((failed as IamError).code).toBe("unauthenticated")
      const token = registered.token!.accessToken
      const validated = yield* client.ValidateToken(create(ValidateTokenRequestSchema)).pipe(RpcClient.withHeaders({ authorization: `Bearer ${token}` }))
      expect(validated.valid).toBe(true)
      const denied = yield* Effect.flip(client.CreateRole(create(CreateRoleRequestSchema, { name: "r" })).pipe(
        RpcClient.withHeaders({ authorization: `Bearer ${token}` })))
      expect(denied).toBeInstanceOf(IamError)
      expect((denied as IamError).code).toBe("permission_denied")
    }).pipe(Effect.scoped))

  it.effect("health and reflection answer grpc-js clients built from the protocols' own proto files", () =>
    Effect.gen(function*() {
      const { grpc: address } = yield* IamEndpoints
      const healthProto = fileURLToPath(new URL("../../node_modules/grpc-health-check/proto/health/v1/health.proto", import.meta.url))
      const health = grpc.loadPackageDefinition(protoLoader.loadSync(healthProto, { keepCase: true, enums: String, defaults: true })) as any
      const healthClient = new health.grpc.health.v1.Health(address, grpc.credentials.createInsecure())
      const check = (service: string) =>
        Effect.promise(() => new Promise<string>((resolve) =>
          healthClient.Check({ service }, (e: grpc.ServiceError | null, r: any) => resolve(e ? grpc.status[e.code] : r.status))))
      expect(yield* check("")).toBe("SERVING")
      expect(yield* check("gatehouse.iam.v1.AuthService")).toBe("SERVING")
      expect(yield* check("no.such.Service")).toBe("NOT_FOUND")
      const watched = yield* Effect.promise(() => new Promise<string>((resolve) => {
        const stream = healthClient.Watch({ service: "" })
        stream.on("data", (r: any) => {
          resolve(r.status)
          stream.cancel()
        })
        stream.on("error", () => undefined)
      }))
      expect(watched).toBe("SERVING")
      healthClient.close()

      for (const version of ["v1", "v1alpha"]) {
        const file = fileURLToPath(new URL(`../../node_modules/@grpc/reflection/build/proto/grpc/reflection/${version}/reflection.proto`, import.meta.url))
        const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(file, { keepCase: true, defaults: true, oneofs: true })) as any
        const client = new pkg.grpc.reflection[version].ServerReflection(address, grpc.credentials.createInsecure())
        const ask = (request: object) =>
          Effect.promise(() => new Promise<any>((resolve, reject) => {
            const stream = client.ServerReflectionInfo()
            stream.on("data", (r: any) => {
              resolve(r)
              stream.end()
            })
            stream.on("error", reject)
            stream.write(request)
          }))
        const listed = yield* ask({ list_services: "" })
        expect(listed.list_services_response.service.map((s: any) => s.name)).toEqual(expect.arrayContaining([
          "gatehouse.iam.v1.AuthService", "gatehouse.iam.v1.RoleService", "gatehouse.iam.v1.PermissionService",
          "grpc.health.v1.Health", `grpc.reflection.${version}.ServerReflection`
        ]))
        const files = yield* ask({ file_containing_symbol: "gatehouse.iam.v1.AuthService.Register" })
        const names = files.file_descriptor_response.file_descriptor_proto.map((bytes: Buffer) =>
          protoLoader.loadFileDescriptorSetFromBuffer === undefined ? "" : bytes.subarray(2, 2 + bytes[1]!).toString())
        expect(names).toEqual(["gatehouse/iam/v1/iam.proto", "google/protobuf/timestamp.proto"])
        const missing = yield* ask({ file_containing_symbol: "no.such.Symbol" })
        expect(missing.error_response.error_code).toBe(5)
        client.close()
      }
    }))

  it.effect("malformed protobuf, wrong wire types and oversized messages get proper gRPC statuses", () =>
    Effect.gen(function*() {
      const { grpc: address } = yield* IamEndpoints
      const client = new grpc.Client(address, grpc.credentials.createInsecure())
      const raw = (bytes: Buffer) =>
        Effect.promise(() => new Promise<string>((resolve) =>
          client.makeUnaryRequest("/gatehouse.iam.v1.AuthService/Register", (b: Buffer) => b, (b: Buffer) => b, bytes,
            (e: grpc.ServiceError | null) => resolve(e ? grpc.status[e.code] : "OK"))))
      // field 1 (username) claims 255 bytes and carries one
      expect(yield* raw(Buffer.from([0x0a, 0xff, 0x01, 0x61]))).toBe("INVALID_ARGUMENT")
      // field 1 sent as a varint: a string field with the wrong wire type
      expect(yield* raw(Buffer.from([0x08, 0x01]))).toBe("INVALID_ARGUMENT")
      // an otherwise valid message larger than AUTH_IAM_MAX_MESSAGE_BYTES
      const big = Buffer.concat([Buffer.from([0x0a, 0x80, 0x80, 0x08]), Buffer.alloc(128 * 1024, 0x61)])
      expect(yield* raw(big)).toBe("RESOURCE_EXHAUSTED")
      // an empty message is a valid RegisterRequest with every field missing
      expect(yield* raw(Buffer.alloc(0))).toBe("INVALID_ARGUMENT")
      client.close()

      const connectJson = yield* promise(() =>
        fetch(`http://${address}/gatehouse.iam.v1.AuthService/Register`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username: ["not", "a", "string"], password: "x", email: "y" })
        }).then(async (r) => ({ status: r.status, body: await r.json() as any })))
      expect(connectJson.status).toBe(400)
      expect(connectJson.body.code).toBe("invalid_argument")
    }))
})
