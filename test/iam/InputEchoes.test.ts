import { connect as http2Connect } from "node:http2"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { IAM_RPC_PATH } from "../../src/iam/rpc/IamRpcRoutes.js"
import { grpc } from "./support/GrpcJs.js"
import { IamEndpoints, IamTestServer } from "./support/IamTestServer.js"

/**
 * Malformed requests, carrying secret-looking values, over every transport: each is INVALID_ARGUMENT (400), the
 * answer names the field and what it takes, and no value that was sent comes back, in a message, a header or a
 * trailer. Connect refuses unknown fields as REST does.
 */
const SECRET = "sk_live_7Hq9Zx2Pw4Lm"
const SECRET_NUMBER = 98765432

/** One malformed request: its method, its JSON body, and the words the answer must hold. */
interface Case {
  readonly method: string
  readonly body: string
  readonly says: string
}

const CASES: ReadonlyArray<Case> = [
  { method: "AuthService/Login", body: JSON.stringify({ username: "someone", password: SECRET_NUMBER }), says: "field password must be a string" },
  { method: "AuthService/Login", body: JSON.stringify({ username: SECRET, email: `${SECRET}@example.com`, password: SECRET }),
    says: "only one of username, email may be set" },
  { method: "AuthService/Logout", body: JSON.stringify({ all_session: true }),
    says: "request has a field LogoutRequest does not define (its fields: access_token, refresh_token, all_sessions)" },
  { method: "AuthService/Logout", body: JSON.stringify({ [SECRET]: "x" }), says: "request has a field LogoutRequest does not define" },
  { method: "AuthService/Logout", body: JSON.stringify({ all_sessions: SECRET }), says: "field all_sessions must be true or false" },
  { method: "AuthService/GenerateToken", body: JSON.stringify({ user_id: SECRET }), says: "field user_id must be a 32-bit integer" },
  { method: "AuthService/GenerateToken", body: `{"user_id": ${SECRET_NUMBER}${SECRET_NUMBER}}`, says: "field user_id must be a 32-bit integer" },
  { method: "PermissionService/CreatePermission", body: JSON.stringify({ name: "n", resource: SECRET }),
    says: "field resource must be one of the ResourceType names or numbers" },
  { method: "AuthService/RefreshToken", body: `{"refresh_token": "${SECRET}`, says: "request body is not valid JSON" },
  { method: "AuthService/RefreshToken", body: JSON.stringify(SECRET), says: "not a valid RefreshTokenRequest JSON object" },
  { method: "AuthService/RefreshToken", body: `{"refresh_token": "${SECRET}", "refreshToken": "${SECRET}"}`,
    says: "field refresh_token is set more than once" }
]

/** What came back, all of it: the status, the code and message, and every header, trailer and body byte as text. */
interface Answer {
  readonly status: string
  readonly message: string
  readonly everything: string
}

const headersText = (headers: Headers) => [...headers.entries()].map(([k, v]) => `${k}: ${v}`).join("\n")

const connectJson = (address: string, { body, method }: Case, extra: Record<string, string> = {}): Promise<Answer> =>
  fetch(`http://${address}/gatehouse.iam.v1.${method}`, { method: "POST", headers: { "content-type": "application/json", ...extra }, body })
    .then(async (response) => {
      const text = await response.text()
      const error = JSON.parse(text) as { code: string; message: string }
      return { status: `${response.status} ${error.code}`, message: error.message, everything: `${headersText(response.headers)}\n${text}` }
    })

const frame = (json: string): Buffer => {
  const payload = Buffer.from(json)
  const head = Buffer.alloc(5)
  head.writeUInt32BE(payload.length, 1)
  return Buffer.concat([head, payload])
}

/** The gRPC status out of headers (a trailers-only answer) or out of gRPC-Web's trailer frame in the body. */
const statusOf = (fields: Readonly<Record<string, string | undefined>>) => ({
  status: String(fields["grpc-status"]),
  message: decodeURIComponent(fields["grpc-message"] ?? "")
})

const grpcWebJson = (address: string, { body, method }: Case, extra: Record<string, string> = {}): Promise<Answer> =>
  fetch(`http://${address}/gatehouse.iam.v1.${method}`, {
    method: "POST",
    headers: { "content-type": "application/grpc-web+json", "x-grpc-web": "1", ...extra },
    body: frame(body)
  }).then(async (response) => {
    const bytes = Buffer.from(await response.arrayBuffer())
    let fields: Record<string, string> = Object.fromEntries(response.headers.entries())
    if (fields["grpc-status"] === undefined && bytes.length > 5 && (bytes[0]! & 0x80) !== 0) {
      const trailer = bytes.subarray(5, 5 + bytes.readUInt32BE(1)).toString()
      fields = Object.fromEntries(trailer.split("\r\n").filter((l) => l.includes(":")).map((l) => {
        const at = l.indexOf(":")
        return [l.slice(0, at).trim().toLowerCase(), l.slice(at + 1).trim()]
      }))
    }
    return { ...statusOf(fields), everything: `${headersText(response.headers)}\n${bytes.toString("latin1")}` }
  })

/** gRPC with a JSON body (application/grpc+json), over HTTP/2 as any gRPC client sends it. */
const grpcJson = (address: string, { body, method }: Case, extra: Record<string, string> = {}): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const session = http2Connect(`http://${address}`)
    session.on("error", reject)
    const stream = session.request({
      ":method": "POST",
      ":path": `/gatehouse.iam.v1.${method}`,
      "content-type": "application/grpc+json",
      te: "trailers",
      ...extra
    })
    let headers: Record<string, string> = {}
    let trailers: Record<string, string> = {}
    const chunks: Array<Buffer> = []
    stream.on("response", (h) => (headers = h as Record<string, string>))
    stream.on("trailers", (t) => (trailers = t as Record<string, string>))
    stream.on("data", (chunk: Buffer) => chunks.push(chunk))
    stream.on("end", () => {
      session.close()
      const fields = { ...headers, ...trailers }
      resolve({ ...statusOf(fields), everything: `${JSON.stringify(fields)}\n${Buffer.concat(chunks).toString("latin1")}` })
    })
    stream.end(frame(body))
  })

const REST: Readonly<Record<string, string>> = {
  "AuthService/Login": "/auth/login",
  "AuthService/Logout": "/auth/logout",
  "AuthService/GenerateToken": "/auth/token",
  "AuthService/RefreshToken": "/auth/refresh",
  "PermissionService/CreatePermission": "/auth/permissions"
}

const rest = (http: string, { body, method }: Case): Promise<Answer> =>
  fetch(`${http}${REST[method]}`, { method: "POST", headers: { "content-type": "application/json" }, body }).then(async (response) => {
    const text = await response.text()
    const error = JSON.parse(text) as { code: string; message: string }
    return { status: `${response.status} ${error.code}`, message: error.message, everything: `${headersText(response.headers)}\n${text}` }
  })

layer(IamTestServer(), { timeout: 120_000 })("IAM input in errors", (it) => {
  it.effect("Connect, gRPC-Web and gRPC with JSON bodies, and REST, refuse a malformed message without echoing it", () =>
    Effect.gen(function*() {
      const { grpc: address, http } = yield* IamEndpoints
      for (const request of CASES) {
        const answers = yield* Effect.promise(() =>
          Promise.all([connectJson(address, request), grpcWebJson(address, request), grpcJson(address, request)]))
        const [viaConnect, viaGrpcWeb, viaGrpc] = answers
        expect(viaConnect.status, request.body).toBe("400 invalid_argument")
        expect(viaGrpcWeb.status, request.body).toBe("3")
        expect(viaGrpc.status, request.body).toBe("3")
        // REST parses its body itself (JSON.parse first), so two refusals are worded its own way.
        const viaRest = yield* Effect.promise(() => rest(http, request))
        expect(viaRest.status, request.body).toBe("400 invalid_argument")
        for (const answer of [...answers, ...(request.says.includes("JSON") ? [] : [viaRest])]) {
          expect(answer.message, request.body).toContain(request.says)
        }
        for (const answer of [...answers, viaRest]) {
          expect(answer.everything, request.body).not.toContain(SECRET)
          expect(answer.everything, request.body).not.toContain(String(SECRET_NUMBER))
        }
      }
    }))

  it.effect("a malformed deadline or an unknown compression is refused without repeating the header's value", () =>
    Effect.gen(function*() {
      const { grpc: address } = yield* IamEndpoints
      const request: Case = { method: "AuthService/ValidateToken", body: "{}", says: "" }
      const answers = yield* Effect.promise(() => Promise.all([
        grpcJson(address, request, { "grpc-timeout": SECRET }),
        grpcWebJson(address, request, { "grpc-timeout": SECRET }),
        connectJson(address, request, { "connect-timeout-ms": SECRET }),
        grpcJson(address, request, { "grpc-encoding": SECRET }),
        grpcWebJson(address, request, { "grpc-encoding": SECRET }),
        connectJson(address, request, { "content-encoding": SECRET })
      ]))
      expect(answers.map((a) => a.status)).toEqual(["3", "3", "400 invalid_argument", "12", "12", "501 unimplemented"])
      expect(answers.map((a) => a.message)).toEqual([
        ...Array(2).fill("protocol error: invalid grpc timeout value: (not shown)"),
        "protocol error: invalid connect timeout value: (not shown)",
        ...Array(3).fill("unknown compression \"(not shown)\": supported encodings are gzip,br")
      ])
      for (const answer of answers) expect(answer.everything).not.toContain(SECRET)
      // Valid values still work.
      const fine = yield* Effect.promise(() => connectJson(address, request, { "connect-timeout-ms": "5000", "content-encoding": "identity" }))
      expect(fine.status).toBe("400 invalid_argument")
      expect(fine.message).toBe("token is required")
    }))

  it.effect("Connect refuses a misspelt field instead of ignoring it: Logout {all_session: true} logs nothing out", () =>
    Effect.gen(function*() {
      const { grpc: address } = yield* IamEndpoints
      const call = (method: string, body: object, token?: string) =>
        Effect.promise(() =>
          fetch(`http://${address}/gatehouse.iam.v1.AuthService/${method}`, {
            method: "POST",
            headers: { "content-type": "application/json", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
            body: JSON.stringify(body)
          }).then(async (r) => ({ status: r.status, body: await r.json() as any })))
      const one = (yield* call("Register", { username: "typo", password: "typo password", email: "typo@example.com" })).body.token
      const other = (yield* call("Login", { username: "typo", password: "typo password" })).body.token
      const typo = yield* call("Logout", { all_session: true }, one.accessToken)
      expect(typo.status).toBe(400)
      expect(typo.body.code).toBe("invalid_argument")
      // Nothing was logged out: both sessions are still valid.
      for (const session of [one, other]) expect((yield* call("ValidateToken", { token: session.accessToken })).body.valid).toBe(true)
      expect((yield* call("Logout", { all_sessions: true }, one.accessToken)).status).toBe(200)
      expect((yield* call("ValidateToken", { token: other.accessToken })).body.valid ?? false).toBe(false)
    }))

  it.effect("malformed protobuf is INVALID_ARGUMENT over Connect and gRPC-Web as over gRPC, and good protobuf still works", () =>
    Effect.gen(function*() {
      const { grpc: address } = yield* IamEndpoints
      const url = `http://${address}/gatehouse.iam.v1.AuthService/ValidateToken`
      // Field 1 (token) claiming 255 bytes and carrying one; then a valid ValidateTokenRequest {token: "x"}.
      const bad = Buffer.from([0x0a, 0xff, 0x01, 0x61])
      const good = Buffer.from([0x0a, 0x01, 0x78])
      const webFrame = (bytes: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, 0, bytes.length]), bytes])
      const send = (contentType: string, body: Buffer) =>
        Effect.promise(() => fetch(url, { method: "POST", headers: { "content-type": contentType }, body })
          .then(async (r) => ({ status: r.status, body: Buffer.from(await r.arrayBuffer()) })))

      const connect = yield* send("application/proto", bad)
      expect(connect.status).toBe(400)
      expect(JSON.parse(connect.body.toString())).toEqual({ code: "invalid_argument", message: "request message is not valid protobuf" })
      const connectGood = yield* send("application/proto", good)
      expect(connectGood.status).toBe(200)
      expect([...connectGood.body]).toEqual([0x3a, 0x09, ...Buffer.from("malformed")])

      const web = yield* send("application/grpc-web+proto", webFrame(bad))
      expect(web.status).toBe(200)
      expect(web.body[0]).toBe(0x80)
      // grpc-message spec-encoded: printable ASCII as it is, spaces included (the status fix of the gRPC port).
      expect(web.body.subarray(5).toString().split("\r\n").sort())
        .toEqual(["", "grpc-message: request message is not valid protobuf", "grpc-status: 3"])
      const webGood = yield* send("application/grpc-web+proto", webFrame(good))
      expect([...webGood.body.subarray(0, 16)]).toEqual([0, 0, 0, 0, 11, 0x3a, 0x09, ...Buffer.from("malformed")])
      expect(webGood.body.subarray(21).toString()).toContain("grpc-status: 0")
    }))

  it.effect("gRPC's malformed protobuf names no byte of it; the @effect/rpc group's bad payloads quote nothing", () =>
    Effect.gen(function*() {
      const { grpc: address, http } = yield* IamEndpoints
      const client = new grpc.Client(address, grpc.credentials.createInsecure())
      // LoginRequest field 3 (password) sent as a varint, then field 3 as a string claiming more bytes than follow.
      const secretBytes = Buffer.from(SECRET)
      const bodies = [
        Buffer.concat([Buffer.from([0x18, 0x01, 0x1a, secretBytes.length + 9]), secretBytes]),
        Buffer.concat([Buffer.from([0x0a, secretBytes.length]), secretBytes, Buffer.from([0x1a, 0xff, 0x7f])])
      ]
      for (const bytes of bodies) {
        const answer = yield* Effect.promise(() => new Promise<grpc.ServiceError | null>((resolve) =>
          client.makeUnaryRequest("/gatehouse.iam.v1.AuthService/Login", (b: Buffer) => b, (b: Buffer) => b, bytes,
            (e: grpc.ServiceError | null) => resolve(e))))
        expect(answer?.code).toBe(grpc.status.INVALID_ARGUMENT)
        expect(answer?.details).not.toContain(SECRET)
      }
      client.close()

      const rpc = yield* Effect.promise(() =>
        fetch(`${http}${IAM_RPC_PATH}`, {
          method: "POST",
          headers: { "content-type": "application/ndjson" },
          body: `${JSON.stringify({ _tag: "Request", id: "1", tag: "Login", payload: { username: "x", password: SECRET_NUMBER }, headers: [] })}\n`
        }).then((r) => r.text()))
      expect(rpc).toContain("field password must be a string")
      expect(rpc).not.toContain(String(SECRET_NUMBER))
    }))
})
