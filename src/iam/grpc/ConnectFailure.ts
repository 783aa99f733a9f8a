import { Code, ConnectError } from "@connectrpc/connect"
import { Cause, Effect, Exit, Option, Runtime } from "effect"
import type { IamError } from "../domain/IamError.js"
import { grpcCodeOf } from "../domain/IamStatus.js"

/**
 * The gRPC status for how an Effect ended. A typed failure keeps its code and client-safe message; an
 * interruption (client cancelled, deadline passed) is CANCELED; a defect is INTERNAL with no details.
 */
export const toConnectError = (cause: Cause.Cause<IamError>): ConnectError =>
  Option.match(Cause.failureOption(cause), {
    onSome: (error) => new ConnectError(error.message, grpcCodeOf(error.code)),
    onNone: () =>
      Cause.isInterruptedOnly(cause)
        ? new ConnectError("request cancelled", Code.Canceled)
        : new ConnectError("internal error", Code.Internal)
  })

/**
 * Runs a handler's Effect for connect-node. runPromiseExit, not runPromise: a rejected runPromise is a
 * FiberFailure, which connect would report as INTERNAL for every domain error. The request's abort signal
 * interrupts the fiber.
 */
export const runForConnect = <R>(runtime: Runtime.Runtime<R>) =>
async <A>(effect: Effect.Effect<A, IamError, R>, signal: AbortSignal): Promise<A> => {
  const exit = await Runtime.runPromiseExit(runtime, effect, { signal })
  if (Exit.isSuccess(exit)) return exit.value
  if (!Cause.isInterruptedOnly(exit.cause) && Option.isNone(Cause.failureOption(exit.cause))) {
    await Runtime.runPromise(runtime, Effect.logError("iam: unexpected failure", exit.cause))
  }
  throw toConnectError(exit.cause)
}
