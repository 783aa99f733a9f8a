import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http"
import { createServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from "node:http2"
import { createServer as createNetServer, type AddressInfo, type Socket } from "node:net"
import { Duplex } from "node:stream"
import {
  Code, type ConnectRouter, type ConnectRouterOptions, createConnectRouter, createContextKey, createContextValues, type HandlerContext
} from "@connectrpc/connect"
import {
  compressionBrotli, compressionGzip, universalRequestFromNodeRequest, universalResponseToNodeResponse
} from "@connectrpc/connect-node"
import { trailerFlag, trailerParse, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web"
import { SqlClient } from "@effect/sql"
import { Context, Data, Effect, Layer, Option, Runtime } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { file_gatehouse_iam_v1_iam } from "../../gen/gatehouse/iam/v1/iam_pb.js"
import { file_grpc_health_v1_health } from "../../gen/grpc/health/v1/health_pb.js"
import { file_grpc_reflection_v1_reflection } from "../../gen/grpc/reflection/v1/reflection_pb.js"
import { file_grpc_reflection_v1alpha_reflection } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js"
import { clientAddress } from "../../platform/http/RateLimitKey.js"
import { requestIdFrom } from "../../platform/http/RequestId.js"
import { listenFailure } from "../../platform/ListenFailure.js"
import type { Operation } from "../domain/Guards.js"
import type { IamError } from "../domain/IamError.js"
import { IAM_SERVICES } from "../IamContract.js"
import { anyHandler, IamHandlers } from "../IamHandlers.js"
import { grpcStatusName, type RpcCall, runForConnect } from "./ConnectFailure.js"
import { Health, healthService, ServingStatus } from "./Health.js"
import { reflectionFiles, reflectionV1, reflectionV1alpha, v1, v1alpha } from "./Reflection.js"
import { codeOfConnectName, connectCodeName, connectRefusalStatus, type Refusal, restateRefusal } from "../domain/Refusals.js"

/** Where the gRPC port ended up listening (the configured port may be 0). */
export class IamGrpcAddress extends Context.Tag("iam/IamGrpcAddress")<IamGrpcAddress, {
  readonly host: string
  readonly port: number
}>() {}

export class GrpcListenError extends Data.TaggedError("GrpcListenError")<{ readonly message: string }> {}

/**
 * Every route of the gRPC port: the IAM services from the shared handlers, plus health and reflection. Each
 * proto method is bound to the handler of the same name, so the contract and the handler set cannot drift
 * without the generic binding below failing to find a handler.
 */
export const iamConnectRoutes = (
  handlers: Context.Tag.Service<IamHandlers>,
  run: <A>(effect: Effect.Effect<A, IamError>, signal: AbortSignal, call: RpcCall) => Promise<A>,
  servingStatus: (signal: AbortSignal) => Promise<ServingStatus>,
  clientHeader: string | undefined
) =>
(router: ConnectRouter): void => {
  for (const service of IAM_SERVICES) {
    for (const method of service.methods) {
      const handler = anyHandler(handlers, method.name as Operation)
      const procedure = `/${service.typeName}/${method.name}`
      router.rpc(method, ((request: unknown, context: HandlerContext) => {
        const headers = context.requestHeader
        const forwarded = clientHeader === undefined ? undefined : headers.get(clientHeader) ?? undefined
        const state = context.values.get(CALL_STATE)
        if (state !== undefined) state.entered = true
        return run(
          handler(request as never, {
            authorization: headers.get("authorization") ?? undefined,
            client: clientAddress(forwarded, context.values.get(PEER_ADDRESS))
          }),
          context.signal,
          { procedure, headers }
        )
      }) as never)
    }
  }
  const registry = reflectionFiles([
    file_gatehouse_iam_v1_iam,
    file_grpc_health_v1_health,
    file_grpc_reflection_v1_reflection,
    file_grpc_reflection_v1alpha_reflection
  ])
  const listed = [...IAM_SERVICES, Health, v1.ServerReflection, v1alpha.ServerReflection]
  router.service(Health, healthService(IAM_SERVICES.map((s) => s.typeName), servingStatus))
  router.service(v1.ServerReflection, reflectionV1(registry, listed))
  router.service(v1alpha.ServerReflection, reflectionV1alpha(registry, listed))
}

/**
 * The gRPC spec percent-encodes grpc-message only where it must: '%' and bytes outside printable ASCII. connect-es
 * encodes like encodeURIComponent, ':' and ',' included, and @grpc/grpc-js decodes with decodeURI, which leaves
 * those escaped: "permission denied%3A …" would reach its clients. Re-encoded the spec's way, every decoder
 * (decodeURI, decodeURIComponent, grpc-go's) reads the message as it was written.
 */
const specEncoded = (text: string): string => {
  let encoded = ""
  for (const byte of Buffer.from(text, "utf8")) {
    encoded += byte >= 0x20 && byte <= 0x7e && byte !== 0x25
      ? String.fromCharCode(byte)
      : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`
  }
  return encoded
}

const decodedMessage = (headers: Headers): string | undefined => {
  const message = headers.get("grpc-message")
  if (message === null) return undefined
  try {
    return decodeURIComponent(message)
  } catch {
    return undefined
  }
}

const specEncodedMessage = (headers: Headers | undefined): void => {
  const text = headers === undefined ? undefined : decodedMessage(headers)
  if (text !== undefined) headers!.set("grpc-message", specEncoded(text))
}

/** The gRPC status in a set of headers or trailers, if it holds one. */
const grpcRefusalIn = (headers: Headers | undefined): Refusal | undefined => {
  const status = headers?.get("grpc-status")
  return status === undefined || status === null || status === "0"
    ? undefined
    : { code: Number(status) as Code, message: decodedMessage(headers!) ?? "" }
}

const setGrpcRefusal = (headers: Headers, refusal: Refusal): void => {
  headers.set("grpc-status", String(refusal.code))
  headers.set("grpc-message", specEncoded(refusal.message))
}

/** gRPC-Web's frames: a flag byte, a 4-byte length, the data; the trailers are the frame with the trailer flag. */
const grpcWebFrames = (body: Buffer): ReadonlyArray<{ readonly flags: number; readonly data: Buffer }> | undefined => {
  const frames: Array<{ flags: number; data: Buffer }> = []
  for (let at = 0; at < body.length;) {
    if (at + 5 > body.length) return undefined
    const length = body.readUInt32BE(at + 1)
    if (at + 5 + length > body.length) return undefined
    frames.push({ flags: body[at]!, data: body.subarray(at + 5, at + 5 + length) })
    at += 5 + length
  }
  return frames
}

const grpcWebFrame = (flags: number, data: Uint8Array): Buffer => {
  const head = Buffer.alloc(5)
  head[0] = flags
  head.writeUInt32BE(data.length, 1)
  return Buffer.concat([head, data])
}

type Protocol = "grpc" | "grpc-web" | "grpc-web-text" | "connect"

const protocolOf = (contentType: string): Protocol =>
  contentType.startsWith("application/grpc-web-text") ? "grpc-web-text"
  : contentType.startsWith("application/grpc-web") ? "grpc-web"
  : contentType.startsWith("application/grpc") ? "grpc"
  : "connect"

interface Answer {
  readonly status: number
  readonly header: Headers
  readonly body: Buffer
  readonly trailer: Headers | undefined
}

/**
 * A call connect refused before its handler ran, restated (restateRefusal) in the answer of its protocol: gRPC's
 * status headers or trailers, gRPC-Web's trailer frame, Connect's JSON error body and HTTP status. Returns the
 * answer as it goes out and the refusal it carries. (gRPC-Web text bodies are base64 and left as connect wrote them.)
 */
const restateAnswer = (protocol: Protocol, answer: Answer, limitBytes: number): { answer: Answer; refusal: Refusal | undefined } => {
  switch (protocol) {
    case "grpc": {
      const where = grpcRefusalIn(answer.trailer) !== undefined ? answer.trailer! : answer.header
      const found = grpcRefusalIn(where)
      if (found === undefined) return { answer, refusal: undefined }
      const refusal = restateRefusal(found, limitBytes)
      setGrpcRefusal(where, refusal)
      return { answer, refusal }
    }
    case "grpc-web": {
      const frames = grpcWebFrames(answer.body)
      const last = frames?.find((frame) => (frame.flags & trailerFlag) === trailerFlag)
      const found = last === undefined ? grpcRefusalIn(answer.header) : grpcRefusalIn(trailerParse(last.data))
      if (found === undefined || frames === undefined) return { answer, refusal: found }
      const refusal = restateRefusal(found, limitBytes)
      if (last === undefined) {
        setGrpcRefusal(answer.header, refusal)
        return { answer, refusal }
      }
      const trailer = trailerParse(last.data)
      setGrpcRefusal(trailer, refusal)
      const body = Buffer.concat(frames.map((frame) => frame === last ? grpcWebFrame(frame.flags, trailerSerialize(trailer)) : grpcWebFrame(frame.flags, frame.data)))
      answer.header.delete("content-length")
      return { answer: { ...answer, body }, refusal }
    }
    case "grpc-web-text":
      return { answer, refusal: grpcRefusalIn(answer.header) }
    case "connect": {
      if (answer.status === 200) return { answer, refusal: undefined }
      let parsed: { code?: unknown; message?: unknown }
      try {
        parsed = JSON.parse(answer.body.toString("utf8")) as typeof parsed
      } catch {
        return { answer, refusal: undefined }
      }
      const code = typeof parsed.code === "string" ? codeOfConnectName(parsed.code) : undefined
      if (code === undefined) return { answer, refusal: undefined }
      const refusal = restateRefusal({ code, message: typeof parsed.message === "string" ? parsed.message : "" }, limitBytes)
      answer.header.delete("content-length")
      return {
        answer: {
          ...answer,
          status: connectRefusalStatus(refusal, answer.status, limitBytes),
          body: Buffer.from(JSON.stringify({ code: connectCodeName(refusal.code), message: refusal.message }))
        },
        refusal
      }
    }
  }
}

/** The address of the connection a call came in on, handed to the handlers by iamNodeAdapter. */
const PEER_ADDRESS = createContextKey<string | undefined>(undefined, { description: "peer address" })

/** Set by an IAM method's route when its handler starts: a call that ends without it was refused by connect itself. */
const CALL_STATE = createContextKey<{ entered: boolean } | undefined>(undefined, { description: "call state" })

/** What the gRPC port logs of a call that connect refused before any handler ran: no payload, no header values. */
export interface RefusedCall {
  readonly procedure: string
  readonly code: string
  readonly durationMs: number
  readonly headers: Headers
}

const IAM_PROCEDURES: ReadonlySet<string> = new Set(
  IAM_SERVICES.flatMap((service) => service.methods.map((method) => `/${service.typeName}/${method.name}`))
)

/**
 * connectNodeAdapter's request routing, for the IAM methods (all unary) with the answer read whole before it is
 * written, so that a call refused before its handler (too large, not protobuf) is restated as IAM states it and
 * leaves one log line like every other call; every grpc-message is spec-encoded.
 */
const iamNodeAdapter = (options: ConnectRouterOptions & {
  readonly routes: (router: ConnectRouter) => void
  readonly limitBytes: number
  readonly refused: (call: RefusedCall) => void
}) => {
  const router = createConnectRouter({ ...options, acceptCompression: [compressionGzip, compressionBrotli] })
  options.routes(router)
  const paths = new Map(router.handlers.map((h) => [h.requestPath, h]))
  return (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse): void => {
    const path = req.url?.split("?", 1)[0] ?? ""
    const handler = paths.get(path)
    if (handler === undefined) {
      res.writeHead(404)
      res.end()
      return
    }
    const started = performance.now()
    const state = { entered: false }
    // An HTTP/2 request's socket is the session's, which here is the replaying stream: it carries the address.
    const values = createContextValues().set(PEER_ADDRESS, req.socket?.remoteAddress).set(CALL_STATE, state)
    const universal = universalRequestFromNodeRequest(req as IncomingMessage, res as ServerResponse, undefined, values)
    handler(universal)
      .then(async (response) => {
        if (!IAM_PROCEDURES.has(path)) {
          specEncodedMessage(response.header)
          const trailer = response.trailer
          const body = response.body
          return universalResponseToNodeResponse(trailer === undefined || body === undefined ? response : {
            ...response,
            body: (async function*() {
              yield* body
              specEncodedMessage(trailer)
            })()
          }, res as ServerResponse)
        }
        const chunks: Array<Uint8Array> = []
        if (response.body !== undefined) for await (const chunk of response.body) chunks.push(chunk)
        let answer: Answer = {
          status: response.status,
          header: response.header ?? new Headers(),
          body: Buffer.concat(chunks),
          trailer: response.trailer
        }
        if (!state.entered) {
          const restated = restateAnswer(protocolOf(universal.header.get("content-type") ?? ""), answer, options.limitBytes)
          answer = restated.answer
          if (restated.refusal !== undefined) {
            options.refused({
              procedure: path,
              code: grpcStatusName(restated.refusal.code),
              durationMs: Math.round(performance.now() - started),
              headers: universal.header
            })
          }
        }
        specEncodedMessage(answer.header)
        specEncodedMessage(answer.trailer)
        const { body, trailer } = answer
        return universalResponseToNodeResponse({
          status: answer.status,
          header: answer.header,
          body: (async function*() {
            if (body.length > 0) yield body
          })(),
          ...(trailer === undefined ? {} : { trailer })
        }, res as ServerResponse)
      })
      .catch(() => undefined)
  }
}

/** A duplex over `socket` that first yields `first`, the bytes the protocol sniffing consumed. */
const replaying = (socket: Socket, first: Buffer): Duplex => {
  const stream: Duplex = new Duplex({
    read: () => void socket.resume(),
    write: (chunk, encoding, callback) => void socket.write(chunk, encoding, callback),
    final: (callback) => void socket.end(callback),
    destroy: (error, callback) => {
      socket.destroy(error ?? undefined)
      callback(error)
    }
  })
  // What node:http2 reports as the request's socket address (the login throttle's client without a proxy header).
  Object.defineProperty(stream, "remoteAddress", { value: socket.remoteAddress, enumerable: true })
  stream.push(first)
  socket.on("data", (chunk) => {
    if (!stream.push(chunk)) socket.pause()
  })
  socket.once("end", () => stream.push(null))
  socket.once("error", (error) => stream.destroy(error))
  socket.once("close", () => stream.destroy())
  return stream
}

const SHUTDOWN_GRACE_MS = 2000

// The HTTP/2 client preface starts with these bytes; anything else on a fresh connection is HTTP/1.x.
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0")

/**
 * The gRPC port: gRPC (HTTP/2 cleartext), gRPC-Web and Connect, from one connect-node handler. One TCP
 * listener looks at each connection's first bytes and hands it to an HTTP/2 server (gRPC, h2c Connect) or an
 * HTTP/1.1 server (gRPC-Web and Connect from browsers and curl).
 */
export const IamGrpcServerLive: Layer.Layer<IamGrpcAddress, GrpcListenError, IamHandlers | AppConfig | SqlClient.SqlClient> =
  Layer.scoped(
    IamGrpcAddress,
    Effect.gen(function*() {
      const { api, iam, rateLimit } = yield* AppConfig
      const handlers = yield* IamHandlers
      const sql = yield* SqlClient.SqlClient
      const runtime = yield* Effect.runtime<never>()
      const run = runForConnect(runtime, { requestIdHeader: Option.getOrUndefined(api.requestIdHeader) })
      const servingStatus = (signal: AbortSignal) =>
        Runtime.runPromise(runtime, sql`SELECT 1`.pipe(
          Effect.as(ServingStatus.SERVING),
          Effect.orElseSucceed(() => ServingStatus.NOT_SERVING)
        ), { signal })

      const clientHeader = Option.getOrUndefined(Option.map(rateLimit.header, (name) => name.toLowerCase()))
      const requestIdHeader = Option.getOrUndefined(api.requestIdHeader)
      const refused = (call: RefusedCall): void =>
        void Runtime.runFork(runtime, Effect.logInfo("rpc").pipe(Effect.annotateLogs({
          procedure: call.procedure,
          code: call.code,
          duration_ms: call.durationMs,
          refused: "before the handler",
          request_id: requestIdFrom(Object.fromEntries(call.headers.entries()), requestIdHeader)
        })))
      const adapter = iamNodeAdapter({
        routes: iamConnectRoutes(handlers, run, servingStatus, clientHeader),
        readMaxBytes: iam.maxMessageBytes,
        limitBytes: iam.maxMessageBytes,
        refused,
        grpc: true,
        grpcWeb: true,
        connect: true
      })
      // HTTP/1.1 drops the optional whitespace around a header value; node:http2 (RFC 9113) drops the whole field
      // when its value starts or ends with whitespace, so `authorization: Bearer <token> ` would arrive as no
      // credentials at all. Node 24.2 and later let the field through, and the lenient bearer rule trims it, as over
      // HTTP/1.1; older Node ignores the option (README: "IAM from Go").
      const h2 = createHttp2Server({ strictFieldWhitespaceValidation: false } as Parameters<typeof createHttp2Server>[0], adapter)
      const h1 = createHttpServer(adapter)
      const sessions = new Set<Http2Session>()
      h2.on("session", (session) => {
        sessions.add(session)
        session.once("close", () => sessions.delete(session))
      })
      const sockets = new Set<Socket>()
      const front = createNetServer({ noDelay: true }, (socket: Socket) => {
        sockets.add(socket)
        socket.once("close", () => sockets.delete(socket))
        socket.once("data", (first: Buffer) => {
          const isH2 = first.subarray(0, H2_PREFACE.length).equals(H2_PREFACE.subarray(0, Math.min(first.length, H2_PREFACE.length)))
          if (isH2) {
            // node:http2 reads from the socket's native handle, so bytes already read cannot be put back with
            // unshift: the session gets a stream that replays them and then forwards the socket.
            socket.pause()
            h2.emit("connection", replaying(socket, first))
          } else {
            socket.pause()
            socket.unshift(first)
            h1.emit("connection", socket)
            socket.resume()
          }
        })
      })

      const port = yield* Effect.acquireRelease(
        Effect.async<number, GrpcListenError>((resume) => {
          front.once("error", (error) =>
            resume(Effect.fail(new GrpcListenError({
              message: `IAM gRPC ${listenFailure({ host: iam.grpcHost, port: iam.grpcPort }, "AUTH_IAM_GRPC_PORT", error)}`
            }))))
          front.listen(iam.grpcPort, iam.grpcHost, () => resume(Effect.succeed((front.address() as AddressInfo).port)))
        }),
        () =>
          Effect.async<void>((resume) => {
            // Open streams get GOAWAY and a moment to finish; idle keep-alive connections and streams that never
            // end (health Watch) must not hold the shutdown.
            front.close(() => resume(Effect.void))
            for (const session of sessions) session.close()
            h1.closeIdleConnections()
            const stragglers = setTimeout(() => sockets.forEach((socket) => socket.destroy()), SHUTDOWN_GRACE_MS)
            stragglers.unref()
            if (sockets.size === 0) clearTimeout(stragglers)
          })
      )
      yield* Effect.logInfo(`IAM gRPC listening on ${iam.grpcHost}:${port}`)
      return { host: iam.grpcHost, port }
    })
  )
