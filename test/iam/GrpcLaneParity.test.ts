/**
 * The ValidateToken lane (src/iam/grpc/ValidateTokenLane.ts) against connect, which it skips: two gRPC ports over
 * one database, one with the lane and one without, asked the same things by @grpc/grpc-js and by a raw node:http2
 * client. Every answer must be the same: message bytes, response headers in order (without date) and trailers. The
 * plain calls the lane answers must not reach connect's adapter; every other call must, once.
 */
import { randomUUID } from "node:crypto"
import { connect, type IncomingHttpHeaders } from "node:http2"
import { gzipSync } from "node:zlib"
import { create, toBinary } from "@bufbuild/protobuf"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as pb from "../../src/gen/gatehouse/iam/v1/iam_pb.js"
import { PasetoTokens } from "../../src/iam/tokens/PasetoTokens.js"
import { grpc, grpcClients } from "./support/GrpcJs.js"
import { IamEndpoints, IamTestServer, IamTestServerOver } from "./support/IamTestServer.js"

const PATH = "/gatehouse.iam.v1.AuthService/ValidateToken"
const MAX_MESSAGE_BYTES = 4096
const ENV = { AUTH_IAM_MAX_MESSAGE_BYTES: String(MAX_MESSAGE_BYTES) }

const frame = (message: Uint8Array, flags = 0): Buffer => {
  const out = Buffer.alloc(5 + message.length)
  out[0] = flags
  out.writeUInt32BE(message.length, 1)
  out.set(message, 5)
  return out
}
const validate = (token: string): Uint8Array => toBinary(pb.ValidateTokenRequestSchema, create(pb.ValidateTokenRequestSchema, { token }))

interface Answer {
  /** Response headers in the order they came, without date. */
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly trailers: ReadonlyArray<readonly [string, string]>
  readonly body: string
}

const fields = (headers: IncomingHttpHeaders): Array<[string, string]> =>
  Object.entries(headers).filter(([name]) => name !== "date").map(([name, value]) => [name, String(value)])

/** One call on a fresh HTTP/2 connection, read as a client gets it. */
const raw = (address: string, headers: Record<string, string>, body: Uint8Array) =>
  Effect.async<Answer>((resume) => {
    const session = connect(`http://${address}`)
    session.on("error", (error) => resume(Effect.die(error)))
    const stream = session.request({ ":method": "POST", ":path": PATH, "content-type": "application/grpc", te: "trailers", ...headers })
    let head: Array<[string, string]> = []
    let trailers: Array<[string, string]> = []
    const chunks: Array<Buffer> = []
    stream.on("response", (h) => void (head = fields(h)))
    stream.on("trailers", (t) => void (trailers = fields(t)))
    stream.on("data", (chunk: Buffer) => void chunks.push(chunk))
    stream.on("error", (error) => resume(Effect.die(error)))
    stream.on("close", () => {
      session.close()
      resume(Effect.succeed({ headers: head, trailers, body: Buffer.concat(chunks).toString("hex") }))
    })
    stream.end(body)
  })

/** One call from @grpc/grpc-js with the message passed through as bytes: what its application sees. */
const viaGrpcJs = (client: grpc.Client, message: Uint8Array, metadata: Record<string, string>) =>
  Effect.async<Answer>((resume) => {
    const meta = new grpc.Metadata()
    for (const [key, value] of Object.entries(metadata)) meta.set(key, value)
    let head: Array<[string, string]> = []
    const call = client.makeUnaryRequest(PATH, (b: Buffer) => b, (b: Buffer) => b, Buffer.from(message), meta, (error, value) => {
      const status = error === null ? [["grpc-status", "0"]] : [["grpc-status", String(error.code)], ["grpc-message", error.details]]
      const trailers = error === null ? [] : Object.entries(error.metadata.getMap()).map(([k, v]) => [k, String(v)] as const)
      resume(Effect.succeed({
        headers: head,
        trailers: [...status, ...trailers] as Array<[string, string]>,
        body: value === undefined ? "" : value.toString("hex")
      }))
    })
    call.on("metadata", (m: grpc.Metadata) =>
      void (head = Object.entries(m.getMap()).filter(([k]) => k !== "date").map(([k, v]) => [k, String(v)] as [string, string])))
  })

layer(IamTestServer(ENV), { timeout: 120_000 })("ValidateToken on the gRPC lane", (it) => {
  it.scoped("answers as connect does, and gives connect every call it does not answer", () =>
    Effect.gen(function*() {
      const reached: Array<string> = []
      const build = (grpcPort: Parameters<typeof IamTestServerOver>[1]) =>
        Effect.map(Layer.build(Layer.fresh(IamTestServerOver(ENV, grpcPort))), (context) => Context.get(context, IamEndpoints).grpc)
      const lane = yield* build({ lane: true, reachedConnect: (path) => void reached.push(path) })
      const plain = yield* build({ lane: false })

      const clients = grpcClients(plain)
      yield* Effect.addFinalizer(() => Effect.sync(clients.close))
      const login = async () => {
        const reply = await clients.call("AuthService", "Login", { username: "lane", password: "lane password" })
        if (!reply.ok) throw new Error(reply.details)
        return reply.value.token as { access_token: string; refresh_token: string }
      }
      const registered = yield* Effect.promise(() =>
        clients.call("AuthService", "Register", { username: "lane", password: "lane password", email: "lane@example.com" }))
      expect(registered.ok).toBe(true)
      const session = yield* Effect.promise(login)
      const gone = yield* Effect.promise(login)
      // Logged out on both ports, so both have the revocation in memory (no NOTIFY on the embedded database).
      for (const address of [lane, plain]) {
        const other = grpcClients(address)
        const out = yield* Effect.promise(() => other.call("AuthService", "Logout", {}, gone.access_token))
        other.close()
        expect(out.ok).toBe(true)
      }
      const tokens = yield* PasetoTokens.pipe(Effect.provide(PasetoTokens.layer))
      const claims = { sub: "1", jti: randomUUID(), typ: "access" as const, fam: randomUUID(), username: "lane" }
      const expired = yield* tokens.sign({ ...claims, exp: new Date(Date.now() - 60_000) }, new Date(Date.now() - 120_000))
      // Long enough that the answer is over connect's 1 KiB compression threshold: compressed for a client that accepts gzip.
      const roles = Array.from({ length: 30 }, (_, i) => `role-${i}-${"x".repeat(40)}`)
      const manyRoles = yield* tokens.sign({ ...claims, jti: randomUUID(), roles, exp: new Date(Date.now() + 600_000) })

      const grpcJs = { lane: new grpc.Client(lane, grpc.credentials.createInsecure()), plain: new grpc.Client(plain, grpc.credentials.createInsecure()) }
      yield* Effect.addFinalizer(() => Effect.sync(() => [grpcJs.lane, grpcJs.plain].forEach((c) => c.close())))

      const same = (answered: "lane" | "connect", send: (address: "lane" | "plain") => Effect.Effect<Answer>, what: string) =>
        Effect.gen(function*() {
          const before = reached.length
          const fast = yield* send("lane")
          const slow = yield* send("plain")
          expect(fast, what).toEqual(slow)
          expect(reached.length - before, `${what}: reached connect`).toBe(answered === "lane" ? 0 : 1)
          return fast
        })
      const both = (answered: "lane" | "connect", message: Uint8Array, metadata: Record<string, string>, what: string) =>
        Effect.gen(function*() {
          const byJs = yield* same(answered, (side) => viaGrpcJs(grpcJs[side], message, metadata), `grpc-js ${what}`)
          const byRaw = yield* same(answered, (side) => raw(side === "lane" ? lane : plain, metadata, frame(message)), `raw ${what}`)
          return { byJs, byRaw }
        })

      const ok = yield* both("lane", validate(session.access_token), {}, "valid token")
      expect(ok.byRaw.trailers).toEqual([["grpc-status", "0"]])
      expect(ok.byRaw.headers).toEqual([[":status", "200"], ["content-type", "application/grpc+proto"], ["vary", "Origin"]])
      yield* both("lane", validate(""), { authorization: `Bearer ${session.access_token}` }, "token from authorization")
      yield* both("lane", validate(session.access_token), { authorization: "Bearer something-else", "x-request-id": "req-1" }, "token in both")
      yield* both("lane", validate(session.refresh_token), {}, "refresh token")
      yield* both("lane", validate(expired), {}, "expired")
      yield* both("lane", validate(gone.access_token), {}, "logged out")
      yield* both("lane", validate("v4.public.garbage"), { "x-request-id": "req-2" }, "garbage")
      yield* both("lane", validate("not a token at all"), {}, "not a token")
      yield* both("lane", validate(manyRoles), {}, "a long answer")
      const gzipped = yield* same("lane", (side) => raw(side === "lane" ? lane : plain, { "grpc-accept-encoding": "gzip" }, frame(validate(manyRoles))), "gzip accepted")
      expect(gzipped.headers).toContainEqual(["grpc-encoding", "gzip"])
      expect(gzipped.body.slice(0, 2)).toBe("01")
      yield* same("lane", (side) => raw(side === "lane" ? lane : plain, { "grpc-accept-encoding": "br, gzip" }, frame(validate(manyRoles))), "br accepted")
      yield* same("lane", (side) => raw(side === "lane" ? lane : plain, { "content-type": "application/grpc+proto" }, frame(validate(session.access_token))), "+proto")

      // Failures the handler states: handed to connect with their outcome.
      const empty = yield* both("connect", validate(""), {}, "no token")
      expect(empty.byRaw.trailers).toContainEqual(["grpc-status", "3"])
      yield* both("connect", validate(""), { authorization: "Basic abc" }, "no bearer")

      // Not plain before the body: connect from the start.
      const to = (side: "lane" | "plain") => (side === "lane" ? lane : plain)
      const token = validate(session.access_token)
      yield* same("connect", (side) => raw(to(side), { "grpc-timeout": "5S" }, frame(token)), "deadline")
      yield* same("connect", (side) => raw(to(side), { "grpc-timeout": "soon" }, frame(token)), "malformed deadline")
      yield* same("connect", (side) => raw(to(side), { "grpc-encoding": "gzip" }, frame(gzipSync(token), 1)), "compressed")
      yield* same("connect", (side) => raw(to(side), { "grpc-encoding": "zstd" }, frame(token)), "unknown compression")
      yield* same("connect", (side) => raw(to(side), { origin: "http://app.example" }, frame(token)), "with origin")
      yield* same("connect", (side) => raw(to(side), { "content-type": "application/grpc+json" }, frame(Buffer.from(JSON.stringify({ token: "x" })))), "json")
      // Read, then handed back with the body: not one frame, over the limit, not the message.
      yield* same("connect", (side) => raw(to(side), {}, Buffer.from([0, 0, 0])), "short frame")
      yield* same("connect", (side) => raw(to(side), {}, Buffer.alloc(0)), "no body")
      yield* same("connect", (side) => raw(to(side), {}, Buffer.concat([frame(token), frame(token)])), "two frames")
      yield* same("connect", (side) => raw(to(side), { "grpc-encoding": "identity" }, frame(token, 1)), "flagged compressed")
      yield* same("connect", (side) => raw(to(side), {}, frame(validate("x".repeat(MAX_MESSAGE_BYTES + 1)))), "over the limit")
      yield* same("connect", (side) => raw(to(side), {}, frame(Buffer.from([0xff, 0xff, 0xff]))), "not protobuf")
      // Other methods are connect's: the Logout above, on the lane's port.
      expect(reached).toContain("/gatehouse.iam.v1.AuthService/Logout")
    }))
})
