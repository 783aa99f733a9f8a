import type { HttpServerResponse } from "@effect/platform"
import type { SqlClient } from "@effect/sql"
import { Layer } from "effect"
import type { AppConfig } from "../config/AppConfig.js"
import { type GrpcListenError, IamGrpcAddress, IamGrpcServerLive } from "./grpc/GrpcServer.js"
import { IamConfiguredAdminLive, type IamServices } from "./IamLive.js"
import { documentIamRoutes } from "./rest/IamRestDocs.js"
import { IamRestRoutesLive, isRestPath, restEdgeRejection } from "./rest/IamRestRoutes.js"
import { IamRpcRoutesLive } from "./rpc/IamRpcRoutes.js"
import type { IamStartupError } from "./tokens/IamKeys.js"

/**
 * What the IAM service adds to the main HTTP port: REST under /auth/..., /auth/keys and the RPC group, how the
 * port's OpenAPI document describes them, and its envelope for the edge's refusals (a body over 1 MB).
 */
export const IamHttpProduct = {
  routes: Layer.mergeAll(IamRestRoutesLive, IamRpcRoutesLive) as Layer.Layer<never, never, IamServices>,
  document: documentIamRoutes,
  reject: (path: string, status: number): HttpServerResponse.HttpServerResponse | undefined =>
    isRestPath(path) ? restEdgeRejection(status) : undefined
}

/** The IAM service's own port and start-up work, over its services. */
export const IamBackgroundLive: Layer.Layer<IamGrpcAddress, GrpcListenError | IamStartupError, IamServices | AppConfig | SqlClient.SqlClient> =
  Layer.merge(IamGrpcServerLive, IamConfiguredAdminLive)

export { IamGrpcAddress }
