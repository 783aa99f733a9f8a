import type { Readable } from "node:stream"
import * as HttpServerError from "@effect/platform/HttpServerError"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { jsonDepthExceeds, MAX_JSON_DEPTH } from "./JsonDepth.js"

/** GoTrue's limitRequestBody: larger bodies get 413 before any handler sees them. */
export const MAX_BODY_BYTES = 1024 * 1024

/**
 * Why a body could not be read as JSON. It never carries the body or the parser's message: V8 quotes the
 * input in its syntax errors, and the input may be a password.
 */
export class RequestBodyError extends Data.TaggedError("RequestBodyError")<{
  readonly reason: "TooLarge" | "TooDeep" | "NotJson" | "Unreadable"
}> {}

/** The failure a request body read ended in, when it was one of ours or the platform's size limit. */
export const bodyErrorOf = (error: unknown): RequestBodyError["reason"] | undefined =>
  error instanceof RequestBodyError
    ? error.reason
    : HttpServerError.isServerError(error) && error._tag === "RequestError"
    ? error.cause instanceof RequestBodyError
      ? error.cause.reason
      : error.cause instanceof Error && error.cause.message === "maxBytes exceeded"
      ? "TooLarge"
      : "Unreadable"
    : undefined

/**
 * JSON.parse behind the depth cap. An empty body is null, as the platform reads it, so an endpoint that wants an
 * object reports a missing body the same way as a `null` one.
 */
export const parseJsonBody = (text: string): Effect.Effect<unknown, RequestBodyError> => {
  if (text === "") return Effect.succeed(null)
  if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) return Effect.fail(new RequestBodyError({ reason: "TooDeep" }))
  return Effect.try({ try: () => JSON.parse(text) as unknown, catch: () => new RequestBodyError({ reason: "NotJson" }) })
}

/**
 * Reads a Node request body up to `maxBytes`. Past the limit it stops keeping the bytes but lets the rest of the
 * body drain instead of destroying the request, as the platform's reader does: a destroyed request resets the
 * socket, and a client still uploading a chunked body would see ECONNRESET instead of the 413. Node's
 * requestTimeout bounds how long a client can keep a draining connection busy.
 */
export const readNodeBody = (source: Readable, maxBytes: number): Effect.Effect<string, RequestBodyError> =>
  Effect.async<string, RequestBodyError>((resume) => {
    if (source.readableEnded) return resume(Effect.succeed(""))
    const chunks: Array<Buffer> = []
    let size = 0
    const stop = () => {
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onError)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= maxBytes) {
        chunks.push(chunk)
        return
      }
      stop()
      chunks.length = 0
      source.resume()
      resume(Effect.fail(new RequestBodyError({ reason: "TooLarge" })))
    }
    const onEnd = () => {
      stop()
      resume(Effect.succeed(Buffer.concat(chunks).toString("utf8")))
    }
    const onError = () => {
      stop()
      resume(Effect.fail(new RequestBodyError({ reason: "Unreadable" })))
    }
    // A client that goes away mid-body must not become an unhandled 'error' event once we stopped listening.
    source.on("error", () => undefined)
    source.on("data", onData)
    source.once("end", onEnd)
    source.once("error", onError)
    return Effect.sync(stop)
  })

const readBody = (request: HttpServerRequest.HttpServerRequest, maxBytes: number): Effect.Effect<string, RequestBodyError> => {
  if (Number(request.headers["content-length"] ?? "0") > maxBytes) return Effect.fail(new RequestBodyError({ reason: "TooLarge" }))
  const source = request.source as Partial<Readable>
  return typeof source.on === "function"
    ? readNodeBody(NodeHttpServerRequest.toIncomingMessage(request), maxBytes)
    : Effect.mapError(request.text, () => new RequestBodyError({ reason: "Unreadable" }))
}

const asRequestError = (request: HttpServerRequest.HttpServerRequest) => (cause: RequestBodyError) =>
  new HttpServerError.RequestError({ request, reason: "Decode", cause })

const withBody = (
  request: HttpServerRequest.HttpServerRequest,
  text: () => Effect.Effect<string, HttpServerError.RequestError>
): HttpServerRequest.HttpServerRequest =>
  Object.create(request, {
    text: { get: text },
    json: { get: () => Effect.flatMap(text(), (body) => Effect.mapError(parseJsonBody(body), asRequestError(request))) },
    modify: { value: (options: Parameters<HttpServerRequest.HttpServerRequest["modify"]>[0]) => withBody(request.modify(options), text) }
  }) as HttpServerRequest.HttpServerRequest

/**
 * The request with its body read the one safe way, for every product on the port: `text` stops at `maxBytes`
 * (a 413 whether or not the client sent Content-Length) and `json` refuses nesting past MAX_JSON_DEPTH before
 * JSON.parse, so neither a huge nor a deep body reaches code that could run out of memory or stack. The body is
 * read once, when something first asks for it, and shared by every modified copy of the request; a request
 * nobody reads the body of (GET /user, the hot path) pays for two closures.
 */
export const withBoundedBody = (
  request: HttpServerRequest.HttpServerRequest,
  maxBytes: number = MAX_BODY_BYTES
): HttpServerRequest.HttpServerRequest => {
  let text: Effect.Effect<string, HttpServerError.RequestError> | undefined
  return withBody(request, () => text ??= Effect.runSync(Effect.cached(Effect.mapError(readBody(request, maxBytes), asRequestError(request)))))
}
