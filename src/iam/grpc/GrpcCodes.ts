import { Code } from "@connectrpc/connect"
import type { IamCode } from "../domain/IamError.js"

/**
 * The gRPC status each IamCode travels as. It lives at the gRPC edge so the domain knows nothing of connect; its
 * HTTP twin (domain/IamStatus) is the status Connect itself gives these codes, so every transport agrees.
 */
const GRPC: Readonly<Record<IamCode, Code>> = {
  invalid_argument: Code.InvalidArgument,
  unauthenticated: Code.Unauthenticated,
  permission_denied: Code.PermissionDenied,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  failed_precondition: Code.FailedPrecondition,
  resource_exhausted: Code.ResourceExhausted,
  unavailable: Code.Unavailable,
  internal: Code.Internal
}

const CODES = Object.keys(GRPC) as ReadonlyArray<IamCode>

export const grpcCodeOf = (code: IamCode): Code => GRPC[code]

/** The IamCode a gRPC status stands for; codes the service never produces count as internal. */
export const iamCodeOfGrpc = (grpc: Code): IamCode => CODES.find((code) => GRPC[code] === grpc) ?? "internal"
