/**
 * The gRPC port as a browser page on another origin reaches it, at the HTTP level (node's fetch, which sends what a
 * browser would and enforces nothing): CORS preflights and answers for Connect and gRPC-Web, following the HTTP
 * port's settings (CORS_ALLOWED_ORIGINS, CORS_ALLOWED_HEADERS), and gRPC-Web's text mode. The same from chromium,
 * through connect-web and the official grpc-web client: test/browser/IamInChromium.test.ts.
 */
import { connect as connectHttp2 } from "node:http2"
import { fromBinary, toBinary, create, type DescMessage, type MessageShape } from "@bufbuild/protobuf"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  RegisterRequestSchema, RegisterResponseSchema, ValidateTokenRequestSchema, ValidateTokenResponseSchema
} from "../../src/gen/gatehouse/iam/v1/iam_pb.js"
import { IamEndpoints, IamTestServer } from "./support/IamTestServer.js"

const ORIGIN = "http://app.example.test:3000"
const REGISTER = "/gatehouse.iam.v1.AuthService/Register"
const VALIDATE = "/gatehouse.iam.v1.AuthService/ValidateToken"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const corsOf = (response: Response) => ({
  origin: response.headers.get("access-control-allow-origin"),
  credentials: response.headers.get("access-control-allow-credentials"),
  methods: response.headers.get("access-control-allow-methods"),
  headers: response.headers.get("access-control-allow-headers")
})

const preflight = (grpc: string, origin: string, requestHeaders: string, path = REGISTER) =>
  promise(() =>
    fetch(`http://${grpc}${path}`, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": requestHeaders }
    }))

const connectPost = (grpc: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  promise(() =>
    fetch(`http://${grpc}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-protocol-version": "1", ...headers },
      body: JSON.stringify(body)
    }))

/** One gRPC-Web frame: a flag byte, a big-endian length, the bytes. */
const frame = (flags: number, data: Uint8Array): Buffer => {
  const head = Buffer.alloc(5)
  head.writeUInt8(flags, 0)
  head.writeUInt32BE(data.length, 1)
  return Buffer.concat([head, data])
}

/** A gRPC-Web body's frames: the messages, and the trailers (frame flag 0x80) as a header map. */
const frames = (body: Buffer) => {
  const messages: Array<Buffer> = []
  const trailers: Record<string, string> = {}
  for (let at = 0; at < body.length;) {
    const flags = body.readUInt8(at)
    const length = body.readUInt32BE(at + 1)
    const data = body.subarray(at + 5, at + 5 + length)
    if ((flags & 0x80) === 0) {
      messages.push(data)
    } else {
      for (const line of data.toString("latin1").split("\r\n").filter((l) => l !== "")) {
        const colon = line.indexOf(":")
        trailers[line.slice(0, colon).trim().toLowerCase()] = decodeURIComponent(line.slice(colon + 1).trim())
      }
    }
    at += 5 + length
  }
  return { messages, trailers }
}

/** Base64 that may be padded mid-way (the server encodes each write on its own), decoded run by run. */
const fromPaddedRuns = (text: string): Buffer =>
  Buffer.concat((text.match(/[^=]+=*/g) ?? []).map((run) => Buffer.from(run, "base64")))

/** A unary call in gRPC-Web's text mode, as the official grpc-web client sends it; the request body in `chunks`. */
const grpcWebText = (grpc: string, path: string, chunks: ReadonlyArray<string>, headers: Record<string, string> = {}) =>
  promise(async () => {
    const response = await fetch(`http://${grpc}${path}`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web-text", accept: "application/grpc-web-text", "x-grpc-web": "1", ...headers },
      body: chunks.join("")
    })
    const text = await response.text()
    return { response, text, ...frames(fromPaddedRuns(text)) }
  })

const encodeText = <Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): string =>
  frame(0, toBinary(schema, message)).toString("base64")

layer(IamTestServer({ AUTH_CORS_ALLOWED_HEADERS: "X-App-Version" }), { timeout: 120_000 })(
  "gRPC port: CORS with every origin (CORS_ALLOWED_ORIGINS unset), and gRPC-Web text",
  (it) => {
    it.effect("a preflight for Connect or gRPC-Web is granted with what it asked for; an unlisted header is refused", () =>
      Effect.gen(function*() {
        const { grpc } = yield* IamEndpoints
        const connect = yield* preflight(grpc, ORIGIN, "authorization,connect-protocol-version,connect-timeout-ms,content-type,x-app-version")
        expect(connect.status).toBe(204)
        expect(corsOf(connect)).toEqual({
          origin: ORIGIN,
          credentials: "true",
          methods: "POST",
          headers: "authorization, connect-protocol-version, connect-timeout-ms, content-type, x-app-version"
        })
        const grpcWeb = yield* preflight(grpc, ORIGIN, "authorization,content-type,grpc-timeout,x-grpc-web,x-user-agent", VALIDATE)
        expect(grpcWeb.status).toBe(204)
        expect(corsOf(grpcWeb)).toMatchObject({
          origin: ORIGIN,
          methods: "POST",
          headers: "authorization, content-type, grpc-timeout, x-grpc-web, x-user-agent"
        })
        // The HTTP port's rule: a preflight is granted whole or not at all.
        const unlisted = yield* preflight(grpc, ORIGIN, "content-type,x-not-allowed")
        expect(unlisted.status).toBe(204)
        expect(corsOf(unlisted)).toEqual({ origin: null, credentials: null, methods: null, headers: null })
      }))

    it.effect("answers carry the origin and expose the gRPC status headers, Connect's encodings and retry-after", () =>
      Effect.gen(function*() {
        const { grpc } = yield* IamEndpoints
        const ok = yield* connectPost(grpc, REGISTER, { username: "cors-one", password: "cors password", email: "cors-one@example.com" }, { origin: ORIGIN })
        expect(ok.status).toBe(200)
        expect(corsOf(ok)).toMatchObject({ origin: ORIGIN, credentials: "true" })
        const exposed = (ok.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(/,\s*/)
        expect(exposed).toEqual(expect.arrayContaining([
          "grpc-status", "grpc-message", "grpc-status-details-bin", "content-encoding", "connect-content-encoding", "retry-after"
        ]))
        const refused = yield* connectPost(grpc, "/gatehouse.iam.v1.AuthService/Login", { username: "cors-one", password: "wrong password" }, { origin: ORIGIN })
        expect(refused.status).toBe(401)
        expect(corsOf(refused).origin).toBe(ORIGIN)
        const unknown = yield* promise(() => fetch(`http://${grpc}/no.Such/Method`, { method: "POST", headers: { origin: ORIGIN } }))
        expect(unknown.status).toBe(404)
        expect(corsOf(unknown).origin).toBe(ORIGIN)
        // A call with no Origin (grpc-js, curl, a server) gets no CORS header at all.
        const plain = yield* connectPost(grpc, VALIDATE, { token: "x" })
        expect(plain.status).toBe(200)
        expect(corsOf(plain).origin).toBeNull()
      }))

    it.effect("over HTTP/2 too, a preflight is granted and an answer carries the origin", () =>
      Effect.gen(function*() {
        const { grpc } = yield* IamEndpoints
        const h2 = (headers: Record<string, string>, body?: string) =>
          promise(() => new Promise<Record<string, unknown>>((resolve, reject) => {
            const session = connectHttp2(`http://${grpc}`)
            session.on("error", reject)
            const stream = session.request({ ":path": VALIDATE, origin: ORIGIN, ...headers })
            stream.on("response", (answer) => {
              stream.resume()
              stream.on("end", () => {
                session.close()
                resolve(answer)
              })
            })
            stream.end(body)
          }))
        const preflight = yield* h2({
          ":method": "OPTIONS",
          "access-control-request-method": "POST",
          "access-control-request-headers": "connect-protocol-version,content-type"
        })
        expect(preflight).toMatchObject({
          ":status": 204,
          "access-control-allow-origin": ORIGIN,
          "access-control-allow-headers": "connect-protocol-version, content-type"
        })
        const answer = yield* h2({ ":method": "POST", "content-type": "application/json", "connect-protocol-version": "1" }, "{\"token\":\"x\"}")
        expect(answer).toMatchObject({ ":status": 200, "access-control-allow-origin": ORIGIN })
      }))

    it.effect("gRPC-Web text: a base64 request is answered in base64 with the message and the trailers", () =>
      Effect.gen(function*() {
        const { grpc } = yield* IamEndpoints
        const request = create(RegisterRequestSchema, { username: "text-one", password: "text password", email: "text-one@example.com" })
        const registered = yield* grpcWebText(grpc, REGISTER, [encodeText(RegisterRequestSchema, request)], { origin: ORIGIN })
        expect(registered.response.status).toBe(200)
        expect(registered.response.headers.get("content-type")).toBe("application/grpc-web-text+proto")
        expect(corsOf(registered.response).origin).toBe(ORIGIN)
        expect(registered.text).toMatch(/^[A-Za-z0-9+/=]+$/)
        expect(registered.trailers["grpc-status"]).toBe("0")
        expect(registered.messages).toHaveLength(1)
        const { token, user } = fromBinary(RegisterResponseSchema, registered.messages[0]!)
        expect(user?.username).toBe("text-one")

        // A body made of separately padded pieces (as a proxy that encodes each write sends it) reads the same.
        const bytes = frame(0, toBinary(ValidateTokenRequestSchema, create(ValidateTokenRequestSchema, {})))
        const pieces = [bytes.subarray(0, 4), bytes.subarray(4)].map((piece) => piece.toString("base64"))
        expect(pieces[0]).toMatch(/=$/)
        const validated = yield* grpcWebText(grpc, VALIDATE, pieces, { authorization: `Bearer ${token!.accessToken}` })
        expect(validated.trailers["grpc-status"]).toBe("0")
        expect(fromBinary(ValidateTokenResponseSchema, validated.messages[0]!)).toMatchObject({ valid: true, username: "text-one" })

        // A failure comes back the same way, its status in the trailers.
        const again = yield* grpcWebText(grpc, REGISTER, [encodeText(RegisterRequestSchema, request)])
        expect(again.trailers).toMatchObject({ "grpc-status": "6" })
      }))

    it.effect("gRPC-Web, binary and text: protobuf that does not parse is INVALID_ARGUMENT, never INTERNAL", () =>
      Effect.gen(function*() {
        const { grpc } = yield* IamEndpoints
        // Field 1 (username) claims 255 bytes and carries one; then field 1 as a varint (the wrong wire type).
        for (const bad of [Buffer.from([0x0a, 0xff, 0x01, 0x61]), Buffer.from([0x08, 0x01])]) {
          const text = yield* grpcWebText(grpc, REGISTER, [frame(0, bad).toString("base64")])
          expect(text.trailers["grpc-status"]).toBe("3")
          const binary = yield* promise(async () => {
            const response = await fetch(`http://${grpc}${REGISTER}`, {
              method: "POST",
              headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
              body: frame(0, bad)
            })
            return frames(Buffer.from(await response.arrayBuffer()))
          })
          expect(binary.trailers).toEqual({ "grpc-status": "3", "grpc-message": "request message is not valid protobuf" })
        }
      }))

    it.effect("gRPC-Web text: a body that is not base64 is INVALID_ARGUMENT, never INTERNAL", () =>
      Effect.gen(function*() {
        const { grpc } = yield* IamEndpoints
        for (const body of ["AAAA*AAA", "AAAAA", "AA=A"]) {
          const answer = yield* grpcWebText(grpc, VALIDATE, [body])
          expect(answer.response.status, body).toBe(200)
          expect(answer.trailers, body).toEqual({ "grpc-status": "3", "grpc-message": "request body is not valid base64" })
        }
      }))
  }
)

describe("gRPC port: CORS with CORS_ALLOWED_ORIGINS set", () => {
  layer(IamTestServer({ AUTH_CORS_ALLOWED_ORIGINS: "http://app.example.test:3000, https://*.preview.example.test" }), { timeout: 120_000 })(
    "listed origins only",
    (it) => {
      it.effect("a listed origin is granted; any other gets no Access-Control-* header, preflight or answer", () =>
        Effect.gen(function*() {
          const { grpc } = yield* IamEndpoints
          for (const origin of [ORIGIN, "https://pr-7.preview.example.test"]) {
            const granted = yield* preflight(grpc, origin, "connect-protocol-version,content-type")
            expect(corsOf(granted), origin).toMatchObject({ origin, credentials: "true", methods: "POST" })
            const answer = yield* connectPost(grpc, VALIDATE, { token: "x" }, { origin })
            expect(answer.status).toBe(200)
            expect(corsOf(answer).origin, origin).toBe(origin)
          }
          for (const origin of ["http://evil.example.test", "http://app.example.test:3001", "https://preview.example.test", "null"]) {
            const refused = yield* preflight(grpc, origin, "connect-protocol-version,content-type")
            expect(refused.status).toBe(204)
            expect(corsOf(refused), origin).toEqual({ origin: null, credentials: null, methods: null, headers: null })
            // The call itself is still answered (CORS is the browser's to enforce); nothing lets a page read it.
            const answer = yield* connectPost(grpc, VALIDATE, { token: "x" }, { origin })
            expect(answer.status).toBe(200)
            expect(corsOf(answer).origin, origin).toBeNull()
            expect(answer.headers.get("access-control-expose-headers")).toBeNull()
          }
        }))
    }
  )
})
