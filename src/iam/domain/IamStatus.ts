import { IamCode } from "./IamError.js"

/**
 * The HTTP status an IamCode is answered with on the REST mirror: the canonical google.rpc mapping that Connect and
 * grpc-gateway both use, so a client sees the same status for the same failure on every transport. The gRPC code
 * of each is the gRPC edge's (grpc/GrpcCodes).
 */
const HTTP: Readonly<Record<IamCode, number>> = {
  invalid_argument: 400,
  unauthenticated: 401,
  permission_denied: 403,
  not_found: 404,
  already_exists: 409,
  failed_precondition: 400,
  resource_exhausted: 429,
  unavailable: 503,
  internal: 500
}

export const IAM_CODES: ReadonlyArray<IamCode> = IamCode.literals

export const httpStatusOf = (code: IamCode): number => HTTP[code]
