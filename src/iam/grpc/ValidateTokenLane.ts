import type { Http2ServerRequest, Http2ServerResponse } from "node:http2"
import { fromBinary, toBinary } from "@bufbuild/protobuf"
import type { Compression } from "@connectrpc/connect/protocol"
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import { IamConfig } from "../../config/IamConfig.js"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import * as pb from "../../gen/gatehouse/iam/v1/iam_pb.js"
import { clientAddress, clientHeaderName } from "../../platform/http/RateLimitKey.js"
import { headerValue } from "../../platform/http/RequestPeer.js"
import type { IamError } from "../domain/IamError.js"
import { methodOf } from "../IamContract.js"
import { IamHandlers } from "../IamHandlers.js"
import { observeCall, settleForConnect } from "./ConnectFailure.js"
import { isPlainGrpcCall, negotiatedResponseEncoding, type NodeHeaders, unaryPayload } from "./PlainGrpcCall.js"

/** What the lane hands connect with a call it took and then gave back. */
export interface ConnectHandBack {
  /** The request body the lane read: connect reads this instead of the (spent) stream. */
  readonly body: Uint8Array
  /** The call's outcome when the handler already ran: connect answers it without running the handler again. */
  readonly settled?: ((signal: AbortSignal) => Promise<unknown>) | undefined
}

/** The gRPC port's connect adapter, as the lane calls it for whatever it does not answer itself. */
export type ToConnect = (req: Http2ServerRequest, res: Http2ServerResponse, handBack?: ConnectHandBack) => void

/** Given a request: false (synchronously) when the lane does not take it; true when it answers or hands it to connect. */
export type GrpcLane = (req: Http2ServerRequest, res: Http2ServerResponse, toConnect: ToConnect) => boolean

const METHOD = methodOf("ValidateToken")
const PROCEDURE = `/${METHOD.parent.typeName}/${METHOD.name}`

// The compressions the connect router accepts (GrpcServer.ts) and its default compressMinBytes: a reply at least
// this long is compressed when the client accepts one of them.
const COMPRESSIONS: ReadonlyArray<Compression> = [compressionGzip, compressionBrotli]
const COMPRESSION_NAMES = COMPRESSIONS.map((c) => c.name)
const COMPRESS_MIN_BYTES = 1024

/** The request's headers as connect's handler sees them (no pseudo-headers, one value a name), for the call's log line. */
const headerRecord = (headers: NodeHeaders): Record<string, string> => {
  const record: Record<string, string> = {}
  for (const name in headers) {
    if (name.charCodeAt(0) === 58) continue // ':'
    const value = headerValue(headers[name])
    if (value !== undefined) record[name] = value
  }
  return record
}

// The lane takes no call with a deadline (isPlainGrpcCall), so an interrupted call is always a cancelled one: the
// status observeCall reads from connect's signal when that is aborted without a DeadlineExceeded reason.
const NO_DEADLINE = new AbortController().signal

const framed = (flags: number, message: Uint8Array): Buffer => {
  const out = Buffer.allocUnsafe(5 + message.length)
  out[0] = flags
  out.writeUInt32BE(message.length, 1)
  out.set(message, 5)
  return out
}

/**
 * Unary ValidateToken over plain gRPC answered beside connect. connect-node's universal handler, its async-iterable
 * pipeline and the status restating around it cost several times the handler itself on the most frequent IAM call
 * (plan issue 30). The lane reads the one request frame, runs the same handler Effect as the connect route (the
 * IamHandlers service, observed and logged by the same observeCall), and writes what connect writes for a success:
 * the same headers, one DATA frame, grpc-status 0 in the trailers. Everything else goes to connect unchanged: a call
 * that is not plain (PlainGrpcCall.isPlainGrpcCall) before its body is read; a body that is not one uncompressed
 * frame within the size limit, or not a ValidateTokenRequest, with the bytes read; a handler that failed, with its
 * outcome, which connect then states as it states every failure (the handler is not run twice).
 * GrpcLaneParity.test compares the two.
 */
export const validateTokenLane = Effect.gen(function*() {
  const handlers = yield* IamHandlers
  const { api } = yield* PlatformConfig
  const iam = yield* IamConfig
  const runtime = yield* Effect.runtime<never>()
  const requestIdHeader = Option.getOrUndefined(api.requestIdHeader)
  const settle = settleForConnect(runtime)
  const clientHeader = clientHeaderName(api.clientHeader)
  const limitBytes = iam.maxMessageBytes

  const answer = (res: Http2ServerResponse, encoding: string | undefined, message: pb.ValidateTokenResponse): void => {
    const bytes = toBinary(pb.ValidateTokenResponseSchema, message)
    const compression = encoding === undefined ? undefined : COMPRESSIONS.find((c) => c.name === encoding)
    // connect's header order: its Headers are sorted by name; vary is what the CORS policy adds to a call without Origin.
    const headers: Record<string, string> = encoding === undefined
      ? { "content-type": "application/grpc+proto", vary: "Origin" }
      : { "content-type": "application/grpc+proto", "grpc-encoding": encoding, vary: "Origin" }
    const write = (frame: Buffer): void => {
      if (res.closed || res.writableEnded) return
      res.writeHead(200, headers)
      res.write(frame)
      res.addTrailers({ "grpc-status": "0" })
      res.end()
    }
    if (compression === undefined || bytes.length < COMPRESS_MIN_BYTES) return write(framed(0, bytes))
    compression.compress(bytes).then((compressed) => write(framed(1, compressed)), () => res.stream.close())
  }

  const lane: GrpcLane = (req, res, toConnect) => {
    if (req.url !== PROCEDURE || !isPlainGrpcCall(req.method, req.httpVersion, req.headers)) return false
    const chunks: Array<Buffer> = []
    // A stream reset before the end leaves nothing to answer; the error must not go unheard.
    req.on("error", () => undefined)
    req.on("data", (chunk: Buffer) => void chunks.push(chunk))
    req.once("end", () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
      const payload = unaryPayload(body, limitBytes)
      let request: pb.ValidateTokenRequest
      try {
        if (payload === undefined) return toConnect(req, res, { body })
        request = fromBinary(pb.ValidateTokenRequestSchema, payload)
      } catch {
        return toConnect(req, res, { body })
      }
      const headers = req.headers
      const forwarded = clientHeader === undefined ? undefined : headerValue(headers[clientHeader])
      const effect = handlers.ValidateToken(request, {
        authorization: headerValue(headers["authorization"]),
        client: clientAddress(forwarded, req.socket?.remoteAddress)
      })
      // One fiber, observed as the connect route's runs are (observeCall); interrupted if the client goes away
      // first, as connect's request signal interrupts its run.
      const call = { procedure: PROCEDURE, headerRecord: headerRecord(headers) }
      const fiber = Runtime.runFork(runtime, observeCall(call, requestIdHeader, NO_DEADLINE)(effect))
      const cancelled = () => fiber.unsafeInterruptAsFork(fiber.id())
      res.once("close", cancelled)
      fiber.addObserver((exit: Exit.Exit<pb.ValidateTokenResponse, IamError>) => {
        res.off("close", cancelled)
        if (Exit.isSuccess(exit)) return answer(res, negotiatedResponseEncoding(COMPRESSION_NAMES, headers["grpc-accept-encoding"]), exit.value)
        toConnect(req, res, { body, settled: (signal) => settle(exit, signal) })
      })
    })
    return true
  }
  return lane
})
