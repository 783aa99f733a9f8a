import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http"
import { createServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from "node:http2"
import { createServer as createNetServer, type AddressInfo, type Socket } from "node:net"
import { Duplex } from "node:stream"
import {
  type ConnectRouter, type ConnectRouterOptions, createConnectRouter, createContextKey, createContextValues, type HandlerContext
} from "@connectrpc/connect"
import {
  compressionBrotli, compressionGzip, universalRequestFromNodeRequest, universalResponseToNodeResponse
} from "@connectrpc/connect-node"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import { IamConfig } from "../../config/IamConfig.js"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { file_gatehouse_iam_v1_iam } from "../../gen/gatehouse/iam/v1/iam_pb.js"
import { file_grpc_health_v1_health } from "../../gen/grpc/health/v1/health_pb.js"
import { file_grpc_reflection_v1_reflection } from "../../gen/grpc/reflection/v1/reflection_pb.js"
import { file_grpc_reflection_v1alpha_reflection } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js"
import { type CorsPolicy, decideCors } from "../../platform/http/Cors.js"
import { clientAddress, clientHeaderName } from "../../platform/http/RateLimitKey.js"
import { requestIdFrom } from "../../platform/http/RequestId.js"
import { listenFailure } from "../../platform/process/ListenFailure.js"
import type { Operation } from "../domain/Guards.js"
import type { IamError } from "../domain/IamError.js"
import type { Refusal } from "./ConnectRefusals.js"
import { IAM_SERVICES } from "../IamContract.js"
import { anyHandler, IamHandlers } from "../IamHandlers.js"
import { IamSql } from "../IamSql.js"
import { grpcStatusName, type RpcCall, runForConnect } from "./ConnectFailure.js"
import { withoutEchoedValues } from "./EchoedHeaders.js"
import { grpcCorsPolicy } from "./GrpcCors.js"
import { IamGrpcAddress } from "./IamGrpcAddress.js"
import { grpcWebText } from "./GrpcWebText.js"
import { Health, healthService, ServingStatus } from "./Health.js"
import { reflectionFiles, reflectionV1, reflectionV1alpha, v1, v1alpha } from "./Reflection.js"
import { withRestatedStatus } from "./RestatedStatus.js"
import { strictJson } from "./StrictJson.js"
import { type ConnectHandBack, validateTokenLane } from "./ValidateTokenLane.js"

export { IamGrpcAddress }

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
        // A call the ValidateToken lane ran and handed back: its outcome, stated by connect as any other.
        const settled = context.values.get(SETTLED)
        if (settled !== undefined) return settled(context.signal)
        return run(
          handler(request as never, {
            authorization: headers.get("authorization") ?? undefined,
            client: clientAddress(forwarded, context.values.get(PEER_ADDRESS))
          }),
          context.signal,
          { procedure, headers }
        )
      }) as never, { jsonOptions: strictJson(method.input) })
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

/** The address of the connection a call came in on, handed to the handlers by iamNodeAdapter. */
const PEER_ADDRESS = createContextKey<string | undefined>(undefined, { description: "peer address" })

/** Set by an IAM method's route when its handler starts: a call that ends without it was refused by connect itself. */
const CALL_STATE = createContextKey<{ entered: boolean } | undefined>(undefined, { description: "call state" })

/** The outcome of a call the ValidateToken lane already ran (ValidateTokenLane.ts's ConnectHandBack). */
const SETTLED = createContextKey<ConnectHandBack["settled"]>(undefined, { description: "settled call" })

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

/** A Node request's headers as the CORS decision reads them: lower-case names, one value each. */
const corsRequest = (req: IncomingMessage | Http2ServerRequest) => ({
  method: req.method ?? "",
  headers: Object.fromEntries(
    Object.entries(req.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(", ") : value])
  )
})

/**
 * connectNodeAdapter's request routing, in this order: CORS for browser pages on other origins (preflights answered
 * here, every answer, 404 included, given the policy's headers); the route; request header values connect would quote
 * in a refusal replaced (withoutEchoedValues); gRPC-Web text translated to binary and back (grpcWebText) around the
 * one place that restates every status (withRestatedStatus), so that text answers are restated as binary ones are and
 * streams (health Watch) are never held back. A call to an IAM method refused before its handler ran (too large, not
 * protobuf, JSON that is not the message, a malformed header) leaves one log line, as every other call does.
 */
const iamNodeAdapter = (options: ConnectRouterOptions & {
  readonly routes: (router: ConnectRouter) => void
  readonly cors: CorsPolicy
  readonly readMaxBytes: number
  readonly refused: (call: RefusedCall) => void
}) => {
  const router = createConnectRouter({ ...options, acceptCompression: [compressionGzip, compressionBrotli] })
  options.routes(router)
  const paths = new Map(router.handlers.map((h) => [h.requestPath, h]))
  return (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse, handBack?: ConnectHandBack): void => {
    const cors = decideCors(options.cors, corsRequest(req))
    if (cors._tag === "Preflight") {
      res.writeHead(204, cors.headers)
      res.end()
      return
    }
    const path = req.url?.split("?", 1)[0] ?? ""
    const handler = paths.get(path)
    if (handler === undefined) {
      res.writeHead(404, cors.headers)
      res.end()
      return
    }
    const started = performance.now()
    const state = { entered: false }
    // An HTTP/2 request's socket is the session's, which here is the replaying stream: it carries the address.
    const values = createContextValues().set(PEER_ADDRESS, req.socket?.remoteAddress).set(CALL_STATE, state)
    if (handBack?.settled !== undefined) values.set(SETTLED, handBack.settled)
    // A body the lane already read is given to connect in place of the spent request stream.
    const body = handBack === undefined ? undefined : bodyOf(handBack.body)
    const request = universalRequestFromNodeRequest(req as IncomingMessage, res as ServerResponse, body as never, values)
    withoutEchoedValues(request.header)
    const refused = (refusal: Refusal): void => {
      if (state.entered || !IAM_PROCEDURES.has(path)) return
      options.refused({
        procedure: path,
        code: grpcStatusName(refusal.code),
        durationMs: Math.round(performance.now() - started),
        headers: request.header
      })
    }
    grpcWebText(withRestatedStatus(handler, options.readMaxBytes, refused))(request)
      .then((response) => {
        const header = response.header ?? new Headers()
        for (const [name, value] of Object.entries(cors.headers)) header.set(name, value)
        return universalResponseToNodeResponse({ ...response, header }, res as ServerResponse)
      })
      .catch(() => undefined)
  }
}

const bodyOf = (bytes: Uint8Array): AsyncIterable<Uint8Array> => (async function*() {
  if (bytes.length > 0) yield bytes
})()

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
export const IamGrpcServerLive: Layer.Layer<IamGrpcAddress, GrpcListenError, IamHandlers | PlatformConfig | IamConfig | IamSql> =
  Layer.suspend(() => iamGrpcServer({ lane: true }))

/**
 * The gRPC port; `lane: false` leaves out the ValidateToken lane (ValidateTokenLane.ts), so every call goes through
 * connect: what the lane is compared with (GrpcLaneParity.test). `reachedConnect` hears of every HTTP/2 request that
 * connect's adapter gets (the lane's hand-backs included), for that test.
 */
export const iamGrpcServer = (options: {
  readonly lane: boolean
  readonly reachedConnect?: ((path: string) => void) | undefined
}): Layer.Layer<IamGrpcAddress, GrpcListenError, IamHandlers | PlatformConfig | IamConfig | IamSql> =>
  Layer.scoped(
    IamGrpcAddress,
    Effect.gen(function*() {
      const { api } = yield* PlatformConfig
      const iam = yield* IamConfig
      const handlers = yield* IamHandlers
      const { reachable } = yield* IamSql
      const runtime = yield* Effect.runtime<never>()
      const run = runForConnect(runtime, { requestIdHeader: Option.getOrUndefined(api.requestIdHeader) })
      const servingStatus = (signal: AbortSignal) =>
        Runtime.runPromise(runtime, Effect.map(reachable, (up) => up ? ServingStatus.SERVING : ServingStatus.NOT_SERVING), { signal })

      const clientHeader = clientHeaderName(api.clientHeader)
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
        cors: grpcCorsPolicy(api.corsAllowedHeaders, api.corsAllowedOrigins),
        readMaxBytes: iam.maxMessageBytes,
        refused,
        grpc: true,
        grpcWeb: true,
        connect: true
      })
      // HTTP/1.1 drops the optional whitespace around a header value; node:http2 (RFC 9113) drops the whole field
      // when its value starts or ends with whitespace, so `authorization: Bearer <token> ` would arrive as no
      // credentials at all. Node 24.2 and later let the field through, and the lenient bearer rule trims it, as over
      // HTTP/1.1; older Node ignores the option (README: "IAM from Go").
      const lane = options.lane ? yield* validateTokenLane : undefined
      const { reachedConnect } = options
      const toConnect = reachedConnect === undefined ? adapter : (req: Http2ServerRequest, res: Http2ServerResponse, handBack?: ConnectHandBack): void => {
        reachedConnect(req.url)
        adapter(req, res, handBack)
      }
      const h2Requests = lane === undefined ? toConnect : (req: Http2ServerRequest, res: Http2ServerResponse): void => {
        if (!lane(req, res, toConnect)) toConnect(req, res)
      }
      const h2 = createHttp2Server({ strictFieldWhitespaceValidation: false } as Parameters<typeof createHttp2Server>[0], h2Requests)
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
