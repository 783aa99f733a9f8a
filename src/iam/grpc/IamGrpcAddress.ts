import * as Context from "effect/Context"

/**
 * Where the gRPC port ended up listening (the configured port may be 0). Apart from GrpcServer.ts so that the
 * banner can read it without loading the gRPC stack, which a server without the IAM service never loads.
 */
export class IamGrpcAddress extends Context.Tag("iam/IamGrpcAddress")<IamGrpcAddress, {
  readonly host: string
  readonly port: number
}>() {}
