import * as FileSystem from "@effect/platform/FileSystem"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { decideCors, type CorsPolicy } from "./Cors.js"
import { OPERATOR_SIGNATURE_HEADER, verifyOperatorSignature } from "./OperatorSignature.js"
import { MAX_BODY_BYTES, withBoundedBody } from "./RequestBody.js"
import { RequestId, requestIdFrom } from "./RequestId.js"

/** A request the edge refuses before any product sees it (a body over 1 MB), answered in the product's envelope. */
export type EdgeRefusal = (
  request: HttpServerRequest.HttpServerRequest,
  requestId: string,
  status: number,
  code: string,
  message: string
) => HttpServerResponse.HttpServerResponse

/** A request's path without its query string (which may carry tokens, so logs never see it). */
export const pathOf = (request: HttpServerRequest.HttpServerRequest): string => request.url.split("?", 1)[0]!

export interface EdgeOptions {
  readonly cors: CorsPolicy
  readonly requestIdHeader: Option.Option<string>
  /** Multi-instance mode: OPERATOR_TOKEN, with which every request but the health check must be signed. */
  readonly operatorToken: Option.Option<Redacted.Redacted<string>>
  readonly reject: EdgeRefusal
}

// The load balancer's and the operator's own probe: it carries no signature.
const HEALTH_PATHS = new Set(["/health", "/auth/v1/health"])

const OPERATOR_REFUSALS = {
  missing: { code: "no_authorization", message: "Operator microservice headers missing" },
  invalid: { code: "bad_jwt", message: "Operator microservice signature is invalid" }
} as const

/**
 * What every request passes before routing: a request id (in the log annotations and the RequestId
 * reference), CORS, the 1 MB body limit (Content-Length here, chunked bodies and JSON depth when the body is
 * read: withBoundedBody), and one access-log line. The log names the path only: query strings
 * carry tokens (GET /verify?token=…).
 */
export const edgeMiddleware = (options: EdgeOptions) =>
<E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const requestId = requestIdFrom(request.headers, Option.getOrUndefined(options.requestIdHeader))
    const cors = decideCors(options.cors, { method: request.method, headers: request.headers })
    const contentLength = Number(request.headers["content-length"] ?? "0")
    const withCors = (response: HttpServerResponse.HttpServerResponse) => HttpServerResponse.setHeaders(response, cors.headers)
    // The app sends its response before this middleware sees it, so headers are added by a pre-response hook.
    const answer: HttpApp.Default<E, R> = cors._tag === "Preflight"
      ? Effect.succeed(withCors(HttpServerResponse.empty({ status: 204 })))
      : contentLength > MAX_BODY_BYTES
      ? Effect.succeed(withCors(options.reject(request, requestId, 413, "request_entity_too_large", "Request entity too large")))
      : Effect.zipRight(
        HttpApp.appendPreResponseHandler((_request, response) => Effect.succeed(withCors(response))),
        Effect.provideService(
          HttpIncomingMessage.withMaxBodySize(app, Option.some(FileSystem.Size(MAX_BODY_BYTES))),
          HttpServerRequest.HttpServerRequest,
          withBoundedBody(request)
        )
      )
    // In multi-instance mode a request that did not come through the operator is refused before anything else.
    const operatorToken = Option.getOrUndefined(options.operatorToken)
    const respond: HttpApp.Default<E, R> = operatorToken === undefined || HEALTH_PATHS.has(pathOf(request)) ? answer : Effect.flatMap(
      Clock.currentTimeMillis,
      (now) => {
        const verdict = verifyOperatorSignature(request.headers[OPERATOR_SIGNATURE_HEADER], Redacted.value(operatorToken), Math.floor(now / 1000))
        return verdict === "valid"
          ? answer
          : Effect.succeed(withCors(options.reject(request, requestId, 400, OPERATOR_REFUSALS[verdict].code, OPERATOR_REFUSALS[verdict].message)))
      }
    )
    return withAccessLog(request.method, pathOf(request), requestId, respond, (response) => response.status)
  })

/**
 * A request's answer with its one access-log line (method, path, status, time taken), under its request id: the
 * edge's and the hot lane's (HotLane.ts), so both write the same line. `statusOf` gives undefined for no answer
 * (the hot lane handing a request to the app, which logs it itself). Above info the line is dropped anyway: then
 * nothing is timed and no annotations are built.
 */
export const withAccessLog = <A, E, R>(
  method: string,
  path: string,
  requestId: string,
  respond: Effect.Effect<A, E, R>,
  statusOf: (answer: A) => number | undefined
): Effect.Effect<A, E, R> => {
  const logged = Effect.flatMap(Clock.currentTimeMillis, (started) =>
    Effect.tap(respond, (answer) => {
      const status = statusOf(answer)
      return status === undefined ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (finished) =>
        Effect.logInfo("request").pipe(Effect.annotateLogs({ method, path, status, duration_ms: finished - started })))
    }))
  return FiberRef.getWith(FiberRef.currentMinimumLogLevel, (minimum) => LogLevel.greaterThan(minimum, LogLevel.Info) ? respond : logged).pipe(
    Effect.provideService(RequestId, requestId),
    Effect.annotateLogs("request_id", requestId)
  )
}
