import type { HttpServerResponse } from "@effect/platform"
import type { SqlClient } from "@effect/sql"
import { Layer } from "effect"
import type { AppConfig } from "../config/AppConfig.js"
import { type GrpcListenError, IamGrpcAddress, IamGrpcServerLive } from "./grpc/GrpcServer.js"
import { IamConfiguredAdminLive, type IamServices } from "./IamLive.js"
import { IamRestRoutesLive, isRestPath, restEdgeRejection } from "./rest/IamRestRoutes.js"
import { IamRpcRoutesLive } from "./rpc/IamRpcRoutes.js"
import type { IamStartupError } from "./tokens/IamKeys.js"

/** What the IAM service adds to the main HTTP port: REST under /auth/..., /auth/keys and the RPC group. */
export const IamHttpRoutesLive: Layer.Layer<never, never, IamServices> = Layer.mergeAll(IamRestRoutesLive, IamRpcRoutesLive)

/** The edge's refusals (a body over 1 MB) of requests to the REST routes, in IAM's envelope rather than GoTrue's. */
export const iamEdgeRejection = (path: string, status: number): HttpServerResponse.HttpServerResponse | undefined =>
  isRestPath(path) ? restEdgeRejection(status) : undefined

/** The IAM service's own port and start-up work, over its services. */
export const IamBackgroundLive: Layer.Layer<IamGrpcAddress, GrpcListenError | IamStartupError, IamServices | AppConfig | SqlClient.SqlClient> =
  Layer.merge(IamGrpcServerLive, IamConfiguredAdminLive)

export { IamGrpcAddress }
