import { Code } from "@connectrpc/connect"
import type { IamCode } from "./IamError.js"

/**
 * How an IamCode travels: the gRPC status code and the HTTP status of the REST mirror. The HTTP column is
 * the canonical google.rpc mapping that Connect and grpc-gateway both use, so a client sees the same status
 * for the same failure on every transport.
 */
const TABLE: Readonly<Record<IamCode, { readonly grpc: Code; readonly http: number }>> = {
  invalid_argument: { grpc: Code.InvalidArgument, http: 400 },
  unauthenticated: { grpc: Code.Unauthenticated, http: 401 },
  permission_denied: { grpc: Code.PermissionDenied, http: 403 },
  not_found: { grpc: Code.NotFound, http: 404 },
  already_exists: { grpc: Code.AlreadyExists, http: 409 },
  failed_precondition: { grpc: Code.FailedPrecondition, http: 400 },
  resource_exhausted: { grpc: Code.ResourceExhausted, http: 429 },
  unavailable: { grpc: Code.Unavailable, http: 503 },
  internal: { grpc: Code.Internal, http: 500 }
}

export const IAM_CODES = Object.keys(TABLE) as ReadonlyArray<IamCode>

export const grpcCodeOf = (code: IamCode): Code => TABLE[code].grpc

export const httpStatusOf = (code: IamCode): number => TABLE[code].http

/** The IamCode a gRPC status stands for; codes the service never produces count as internal. */
export const iamCodeOfGrpc = (grpc: Code): IamCode => IAM_CODES.find((code) => TABLE[code].grpc === grpc) ?? "internal"
