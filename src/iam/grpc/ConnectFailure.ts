import { Code, ConnectError } from "@connectrpc/connect"
import * as HttpHeaders from "@effect/platform/Headers"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import { requestIdFrom } from "../../platform/http/RequestId.js"
import type { IamError } from "../domain/IamError.js"
import { grpcCodeOf } from "./GrpcCodes.js"
import { connectCodeName } from "./ConnectRefusals.js"

/**
 * The gRPC status for how an Effect ended. A typed failure keeps its code, client-safe message and retry hint; an
 * interruption is DEADLINE_EXCEEDED when the call's deadline aborted it (connect aborts the handler's signal with a
 * DeadlineExceeded error as its reason), else CANCELLED (the client went away); a defect is INTERNAL with no details.
 */
export const toConnectError = (cause: Cause.Cause<IamError>, abortReason?: unknown): ConnectError =>
  Option.match(Cause.failureOption(cause), {
    // A retry hint travels as `retry-after` metadata (gRPC trailers, Connect headers), in seconds as over REST.
    onSome: (error) =>
      new ConnectError(
        error.message,
        grpcCodeOf(error.code),
        error.retryAfter === undefined ? undefined : { "retry-after": String(error.retryAfter) }
      ),
    onNone: () =>
      Cause.isInterruptedOnly(cause)
        ? abortReason instanceof ConnectError && abortReason.code === Code.DeadlineExceeded
          ? new ConnectError("deadline exceeded", Code.DeadlineExceeded)
          : new ConnectError("request cancelled", Code.Canceled)
        : new ConnectError("internal error", Code.Internal)
  })

/** A gRPC status: 0 is OK, which connect's Code leaves out (a call that succeeded has no error code). */
export type GrpcStatus = Code | 0

/** A status as gRPC spells it (OK, INVALID_ARGUMENT, CANCELLED), for logs. */
export const grpcStatusName = (status: GrpcStatus): string =>
  status === 0 ? "OK" : status === Code.Canceled ? "CANCELLED" : connectCodeName(status).toUpperCase()

const statusOf = (exit: Exit.Exit<unknown, IamError>, signal: AbortSignal): GrpcStatus =>
  Exit.isSuccess(exit) ? 0 : toConnectError(exit.cause, signal.reason).code

/** One call on the gRPC port: its full method name (/gatehouse.iam.v1.IamService/Login) and request headers. */
export interface RpcCall {
  readonly procedure: string
  readonly headers: Headers
}

/** A call whose headers are already one value per lower-case name (what observeCall reads of an RpcCall's). */
export interface ObservedCall {
  readonly procedure: string
  readonly headerRecord: Readonly<Record<string, string>>
}

/**
 * A handler's Effect as one observed call: a server span named after the method (joining the caller's trace
 * from `traceparent`), its log lines under the call's request id, and one access line when it ends with the
 * method, the status and the time taken: the gRPC twin of the HTTP edge's line. Like the edge, nothing about the
 * call is timed or built for the line when the level is above info.
 */
export const observeCall = (call: RpcCall | ObservedCall, requestIdHeader: string | undefined, signal: AbortSignal) => <A, R>(effect: Effect.Effect<A, IamError, R>) => {
  const headers = "headerRecord" in call ? call.headerRecord : Object.fromEntries(call.headers.entries())
  const requestId = requestIdFrom(headers, requestIdHeader)
  const [service = "", method = ""] = call.procedure.slice(1).split("/")
  const logged = Effect.flatMap(Clock.currentTimeMillis, (started) =>
    Effect.onExit(effect, (exit) =>
      Effect.flatMap(Clock.currentTimeMillis, (finished) =>
        Effect.logInfo("rpc").pipe(Effect.annotateLogs({
          procedure: call.procedure,
          code: grpcStatusName(statusOf(exit, signal)),
          duration_ms: finished - started
        })))))
  // Above info the line is dropped anyway: then nothing is timed and no annotations are built (as the HTTP edge).
  const span = (observed: Effect.Effect<A, IamError, R>) =>
    observed.pipe(
      Effect.onExit((exit) => Effect.annotateCurrentSpan("rpc.grpc.status_code", statusOf(exit, signal))),
      Effect.withSpan(call.procedure, {
        kind: "server",
        parent: Option.getOrUndefined(HttpTraceContext.fromHeaders(HttpHeaders.fromInput(headers))),
        captureStackTrace: false,
        attributes: { "rpc.system": "grpc", "rpc.service": service, "rpc.method": method }
      })
    )
  // With tracing off (the default) no span is opened at all: Traced.ts says what one costs.
  return FiberRef.getWith(FiberRef.currentMinimumLogLevel, (minimum) => LogLevel.greaterThan(minimum, LogLevel.Info) ? effect : logged).pipe(
    (observed) => FiberRef.getWith(FiberRef.currentTracerEnabled, (enabled) => enabled ? span(observed) : observed),
    Effect.annotateLogs("request_id", requestId)
  )
}

/**
 * A handler's Effect run as one observed call (observeCall), to its Exit. The request's abort signal interrupts the
 * fiber. Both the connect route and the ValidateToken lane (ValidateTokenLane.ts) run calls through this.
 */
export const observedExit = <R>(runtime: Runtime.Runtime<R>, options: { readonly requestIdHeader?: string | undefined } = {}) =>
<A>(effect: Effect.Effect<A, IamError, R>, signal: AbortSignal, call: RpcCall | ObservedCall): Promise<Exit.Exit<A, IamError>> =>
  Runtime.runPromiseExit(runtime, observeCall(call, options.requestIdHeader, signal)(effect), { signal })

/**
 * What connect gets of a call's Exit: its value, or the ConnectError that states the failure (a defect is logged
 * first). A rejected promise, not a FiberFailure: connect would report that as INTERNAL for every domain error.
 */
export const settleForConnect = <R>(runtime: Runtime.Runtime<R>) =>
async <A>(exit: Exit.Exit<A, IamError>, signal: AbortSignal): Promise<A> => {
  if (Exit.isSuccess(exit)) return exit.value
  if (!Cause.isInterruptedOnly(exit.cause) && Option.isNone(Cause.failureOption(exit.cause))) {
    await Runtime.runPromise(runtime, Effect.logError("iam: unexpected failure", exit.cause))
  }
  throw toConnectError(exit.cause, signal.reason)
}

/**
 * Runs a handler's Effect for connect-node. runPromiseExit, not runPromise: a rejected runPromise is a
 * FiberFailure, which connect would report as INTERNAL for every domain error. The request's abort signal
 * interrupts the fiber.
 */
export const runForConnect = <R>(runtime: Runtime.Runtime<R>, options: { readonly requestIdHeader?: string | undefined } = {}) => {
  const observed = observedExit(runtime, options)
  const settle = settleForConnect(runtime)
  return async <A>(effect: Effect.Effect<A, IamError, R>, signal: AbortSignal, call: RpcCall): Promise<A> =>
    settle(await observed(effect, signal, call), signal)
}
