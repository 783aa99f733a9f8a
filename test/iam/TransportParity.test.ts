import { request as h1Request } from "node:http"
import { connect, createServer as createH2Server } from "node:http2"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import * as protoLoader from "@grpc/proto-loader"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel, Redacted } from "effect"
import { bootstrapAdmin } from "../../src/iam/BootstrapAdmin.js"
import { tooLargeMessage } from "../../src/iam/domain/Refusals.js"
import { grpc } from "./support/GrpcJs.js"
import { IamEndpoints, IamTestServer } from "./support/IamTestServer.js"
import { http2Post } from "../support/Http2Call.js"

// The same call gets the same answer over gRPC, gRPC-Web, Connect and REST: the bearer header's surrounding
// whitespace, `me` on REST, a wrong method, the one size limit, malformed protobuf, and the one log line a refused
// call leaves.

const LIMIT = 64 * 1024

/** Every log line the servers of this file write: [message, annotations]. */
const logged: Array<{ readonly message: string; readonly annotations: Record<string, unknown> }> = []
const capture = Layer.merge(
  Logger.replace(Logger.defaultLogger, Logger.make(({ annotations, message }) => {
    const text = Array.isArray(message) ? message.join(" ") : String(message)
    logged.push({ message: text, annotations: Object.fromEntries(annotations) })
  })),
  Logger.minimumLogLevel(LogLevel.Info)
)

interface Answer {
  readonly status: number
  readonly headers: Record<string, unknown>
  readonly trailers: Record<string, unknown>
  readonly body: Buffer
}

/** An HTTP/1.1 request with the headers exactly as given (fetch would trim them). */
const http1 = (url: string, method: string, headers: Record<string, string>, body?: Uint8Array | string) =>
  Effect.promise(() =>
    new Promise<Answer>((resolve, reject) => {
      const req = h1Request(url, { method, headers }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, trailers: res.trailers, body: Buffer.concat(chunks) }))
      })
      req.on("error", reject)
      req.end(body)
    })
  )

/** An HTTP/2 request with the headers exactly as given. */
const http2 = (origin: string, path: string, headers: Record<string, string>, body?: Uint8Array | string) =>
  Effect.promise(() => http2Post(origin, path, headers, body))

const json = (answer: Answer): any => JSON.parse(answer.body.toString("utf8"))

/** A gRPC / gRPC-Web frame: flag, 4-byte length, data. */
const frame = (data: Uint8Array, flags = 0) => {
  const head = Buffer.alloc(5)
  head[0] = flags
  head.writeUInt32BE(data.length, 1)
  return Buffer.concat([head, data])
}

/** The grpc-status and grpc-message in a gRPC-Web body's trailer frame. */
const grpcWebStatus = (body: Buffer): { status: string; message: string } => {
  for (let at = 0; at < body.length;) {
    const length = body.readUInt32BE(at + 1)
    if ((body[at]! & 0x80) === 0x80) {
      const text = body.subarray(at + 5, at + 5 + length).toString()
      return {
        status: /grpc-status: ?(\d+)/i.exec(text)?.[1] ?? "",
        message: decodeURIComponent(/grpc-message: ?([^\r\n]*)/i.exec(text)?.[1] ?? "")
      }
    }
    at += 5 + length
  }
  return { status: "", message: "" }
}

/** A RegisterRequest whose username field holds `size` bytes: valid protobuf, too long a name. */
const registerBytes = (size: number) => {
  const length: Array<number> = []
  for (let n = size; ; n >>>= 7) {
    if (n < 0x80) {
      length.push(n)
      break
    }
    length.push((n & 0x7f) | 0x80)
  }
  return Buffer.concat([Buffer.from([0x0a, ...length]), Buffer.alloc(size, 0x61)])
}

/**
 * Whether this Node's HTTP/2 server lets a header value with trailing whitespace through at all (RFC 9113 makes
 * such a field malformed; Node 24.2 and later accept `strictFieldWhitespaceValidation: false`).
 */
const platformKeepsPaddedH2Headers = Effect.promise(() =>
  new Promise<boolean>((resolve) => {
    const server = createH2Server({ strictFieldWhitespaceValidation: false } as Parameters<typeof createH2Server>[0], (req, res) => {
      res.end(req.headers["x-padded"] === undefined ? "dropped" : "kept")
    })
    server.listen(0, "127.0.0.1", () => {
      const session = connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
      const stream = session.request({ ":path": "/", "x-padded": "value " })
      let text = ""
      stream.on("data", (chunk: Buffer) => text += chunk.toString())
      stream.on("end", () => {
        session.close()
        server.close()
        resolve(text === "kept")
      })
      stream.end()
    })
  })
)

layer(IamTestServer({ AUTH_REQUEST_ID_HEADER: "x-request-id" }).pipe(Layer.provide(capture)), { timeout: 120_000 })("IAM transports answer alike", (it) => {
  it.effect("a bearer token followed by a space authenticates over HTTP/1.1 (REST, Connect) and, where Node lets the header through, HTTP/2", () =>
    Effect.gen(function*() {
      const { grpc: address, http } = yield* IamEndpoints
      const registered = yield* http1(`${http}/auth/register`, "POST", { "content-type": "application/json" }, JSON.stringify({
        username: "padded", password: "padded password", email: "padded@example.com"
      }))
      const token = json(registered).token.access_token as string
      const padded = `Bearer ${token} `

      const rest = yield* http1(`${http}/auth/users/me/roles`, "GET", { authorization: padded })
      expect(rest.status).toBe(200)
      const connectH1 = yield* http1(`http://${address}/gatehouse.iam.v1.RoleService/ListUserRoles`, "POST", {
        "content-type": "application/json", authorization: padded
      }, "{}")
      expect(connectH1.status).toBe(200)

      const connectH2 = yield* http2(`http://${address}`, "/gatehouse.iam.v1.RoleService/ListUserRoles", {
        "content-type": "application/json", authorization: padded
      }, "{}")
      if (yield* platformKeepsPaddedH2Headers) {
        expect(connectH2.status).toBe(200)
      } else {
        // This Node's HTTP/2 layer drops the whole field before Gatehouse sees it (README: "IAM from Go").
        expect(connectH2.status).toBe(401)
        expect(json(connectH2)).toEqual({ code: "unauthenticated", message: "a bearer access token is required" })
      }
      // Without the padding, HTTP/2 authenticates as HTTP/1.1 does.
      const plainH2 = yield* http2(`http://${address}`, "/gatehouse.iam.v1.RoleService/ListUserRoles", {
        "content-type": "application/json", authorization: `Bearer ${token}`
      }, "{}")
      expect(plainH2.status).toBe(200)
    }))

  it.effect("REST resolves `me` to the caller on every user route, and a wrong method gets IAM's envelope", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      yield* bootstrapAdmin({ username: "me-admin", email: "me-admin@example.com", password: Redacted.make("admin password") })
      const login = json(yield* http1(`${http}/auth/login`, "POST", { "content-type": "application/json" }, JSON.stringify({
        username: "me-admin", password: "admin password"
      })))
      const bearer = { authorization: `Bearer ${login.token.access_token}`, "content-type": "application/json" }
      const role = json(yield* http1(`${http}/auth/roles`, "POST", bearer, JSON.stringify({ name: "me-role" }))).role

      const assigned = yield* http1(`${http}/auth/users/me/roles`, "POST", bearer, JSON.stringify({ role_id: role.id }))
      expect(assigned.status).toBe(200)
      const mine = json(yield* http1(`${http}/auth/users/me/roles`, "GET", bearer))
      expect(mine.roles.map((r: any) => r.name).sort()).toEqual(["admin", "me-role"])
      const byId = json(yield* http1(`${http}/auth/users/${login.user.id}/roles`, "GET", bearer))
      expect(byId).toEqual(mine)
      expect((yield* http1(`${http}/auth/users/me/roles/${role.id}`, "DELETE", bearer)).status).toBe(200)
      expect(json(yield* http1(`${http}/auth/users/me/roles`, "GET", bearer)).roles.map((r: any) => r.name)).toEqual(["admin"])

      const anonymous = yield* http1(`${http}/auth/users/me/roles`, "GET", {})
      expect(anonymous.status).toBe(401)
      expect(json(anonymous).code).toBe("unauthenticated")
      const notAUser = yield* http1(`${http}/auth/roles/me`, "DELETE", bearer)
      expect(notAUser.status).toBe(400)
      expect(json(notAUser)).toEqual({ code: "invalid_argument", message: "role_id must be a positive integer" })

      for (const [method, path] of [["PUT", "/auth/users/me/roles"], ["GET", "/auth/register"], ["PATCH", "/auth/roles/1"]] as const) {
        const wrong = yield* http1(`${http}${path}`, method, bearer)
        expect(wrong.status).toBe(405)
        expect(json(wrong)).toEqual({ code: "unimplemented", message: "method not allowed" })
      }
    }))

  it.effect("one size limit: RESOURCE_EXHAUSTED over gRPC and gRPC-Web (binary and text), 413 resource_exhausted over Connect and REST, in the same words", () =>
    Effect.gen(function*() {
      const { grpc: address, http } = yield* IamEndpoints
      const message = tooLargeMessage(LIMIT)
      const over = registerBytes(LIMIT + 16)
      const overJson = JSON.stringify({ username: "u".repeat(LIMIT), password: "password", email: "a@b.c" })

      const client = new grpc.Client(address, grpc.credentials.createInsecure())
      const viaGrpc = yield* Effect.promise(() => new Promise<grpc.ServiceError | null>((resolve) =>
        client.makeUnaryRequest("/gatehouse.iam.v1.AuthService/Register", (b: Buffer) => b, (b: Buffer) => b, over, (e) => resolve(e))))
      client.close()
      expect(viaGrpc?.code).toBe(grpc.status.RESOURCE_EXHAUSTED)
      expect(viaGrpc?.details).toBe(message)

      const grpcWeb = yield* http1(`http://${address}/gatehouse.iam.v1.AuthService/Register`, "POST", {
        "content-type": "application/grpc-web+proto"
      }, frame(over))
      expect(grpcWebStatus(grpcWeb.body)).toEqual({ status: "8", message })
      // gRPC-Web text: the same answer, in base64 (padded runs, one per chunk written).
      const grpcWebText = yield* http1(`http://${address}/gatehouse.iam.v1.AuthService/Register`, "POST", {
        "content-type": "application/grpc-web-text"
      }, frame(over).toString("base64"))
      const decoded = Buffer.concat(grpcWebText.body.toString("latin1").split(/(?<==)(?=[^=])/).map((run) => Buffer.from(run, "base64")))
      expect(grpcWebText.headers["content-type"]).toMatch(/^application\/grpc-web-text/)
      expect(grpcWebStatus(decoded)).toEqual({ status: "8", message })

      const connect = yield* http1(`http://${address}/gatehouse.iam.v1.AuthService/Register`, "POST", { "content-type": "application/json" }, overJson)
      expect(connect.status).toBe(413)
      expect(json(connect)).toEqual({ code: "resource_exhausted", message })

      const rest = yield* http1(`${http}/auth/register`, "POST", { "content-type": "application/json" }, overJson)
      expect(rest.status).toBe(413)
      expect(json(rest)).toEqual({ code: "resource_exhausted", message })

      // Just under the limit, the same call is judged on its content, on both ports.
      const underJson = JSON.stringify({ username: "u".repeat(LIMIT - 100), password: "password", email: "a@b.c" })
      const underConnect = yield* http1(`http://${address}/gatehouse.iam.v1.AuthService/Register`, "POST", { "content-type": "application/json" }, underJson)
      const underRest = yield* http1(`${http}/auth/register`, "POST", { "content-type": "application/json" }, underJson)
      expect([underConnect.status, underRest.status]).toEqual([400, 400])
      expect(json(underConnect)).toEqual(json(underRest))
    }))

  it.effect("malformed protobuf is INVALID_ARGUMENT over gRPC-Web too, and every refused call leaves one log line without its payload", () =>
    Effect.gen(function*() {
      const { grpc: address } = yield* IamEndpoints
      logged.length = 0
      // field 1 (username) claims 255 bytes and carries one
      const malformed = Buffer.from([0x0a, 0xff, 0x01, 0x61])
      const grpcWeb = yield* http1(`http://${address}/gatehouse.iam.v1.AuthService/Register`, "POST", {
        "content-type": "application/grpc-web+proto", "x-request-id": "refused-web"
      }, frame(malformed))
      expect(grpcWebStatus(grpcWeb.body)).toEqual({ status: "3", message: "request message is not valid protobuf" })
      const viaGrpc = yield* http2(`http://${address}`, "/gatehouse.iam.v1.AuthService/Register", {
        "content-type": "application/grpc", te: "trailers", "x-request-id": "refused-grpc"
      }, frame(malformed))
      expect(viaGrpc.trailers["grpc-status"] ?? viaGrpc.headers["grpc-status"]).toBe("3")
      const secret = "s3cret-in-an-oversized-body"
      const connect = yield* http1(`http://${address}/gatehouse.iam.v1.AuthService/Login`, "POST", {
        "content-type": "application/proto", "x-request-id": "refused-connect"
      }, Buffer.concat([Buffer.from(secret), registerBytes(LIMIT + 1)]))
      expect(connect.status).toBe(413)

      const refused = logged.filter((line) => line.message === "rpc" && line.annotations["refused"] !== undefined)
      expect(refused.map((line) => [line.annotations["request_id"], line.annotations["procedure"], line.annotations["code"]])).toEqual([
        ["refused-web", "/gatehouse.iam.v1.AuthService/Register", "INVALID_ARGUMENT"],
        ["refused-grpc", "/gatehouse.iam.v1.AuthService/Register", "INVALID_ARGUMENT"],
        ["refused-connect", "/gatehouse.iam.v1.AuthService/Login", "RESOURCE_EXHAUSTED"]
      ])
      expect(JSON.stringify(logged)).not.toContain(secret)
      expect(JSON.stringify(logged)).not.toContain("aaaaaaaa")
    }))

  it.effect("file_by_filename finds the contract by its .proto name, as protoc and Python's descriptor pool name it, and without .proto", () =>
    Effect.gen(function*() {
      const { grpc: address } = yield* IamEndpoints
      const file = fileURLToPath(new URL("../../node_modules/@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto", import.meta.url))
      const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(file, { keepCase: true, defaults: true, oneofs: true })) as any
      const client = new pkg.grpc.reflection.v1.ServerReflection(address, grpc.credentials.createInsecure())
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
      const firstFileName = (answer: any): string => {
        const bytes: Buffer = answer.file_descriptor_response.file_descriptor_proto[0]
        return bytes.subarray(2, 2 + bytes[1]!).toString()
      }
      for (const name of ["gatehouse/iam/v1/iam.proto", "gatehouse/iam/v1/iam", "google/protobuf/timestamp.proto", "grpc/health/v1/health.proto"]) {
        const answer = yield* ask({ file_by_filename: name })
        expect(answer.message_response).toBe("file_descriptor_response")
        expect(firstFileName(answer)).toBe(name.endsWith(".proto") ? name : `${name}.proto`)
      }
      expect((yield* ask({ file_by_filename: "gatehouse/iam/v1/nope.proto" })).error_response.error_code).toBe(5)
      client.close()
    }))
})
