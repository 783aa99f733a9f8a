import type { SqlClient } from "@effect/sql"
import { Layer } from "effect"
import type { AppConfig } from "../config/AppConfig.js"
import { type GrpcListenError, IamGrpcAddress, IamGrpcServerLive } from "./grpc/GrpcServer.js"
import { IamConfiguredAdminLive, type IamServices } from "./IamLive.js"
import { documentIamRoutes } from "./rest/IamRestDocs.js"
import { IamRestRoutesLive } from "./rest/IamRestRoutes.js"
import { IamRpcRoutesLive } from "./rpc/IamRpcRoutes.js"
import type { IamStartupError } from "./tokens/IamKeys.js"

/** What the IAM service adds to the main HTTP port: REST under /auth/..., /auth/keys and the RPC group. */
export const IamHttpRoutesLive: Layer.Layer<never, never, IamServices> = Layer.mergeAll(IamRestRoutesLive, IamRpcRoutesLive)

/** How the OpenAPI document of the main port describes IamHttpRoutesLive. */
export const documentIamHttpRoutes = documentIamRoutes

/** The IAM service's own port and start-up work, over its services. */
export const IamBackgroundLive: Layer.Layer<IamGrpcAddress, GrpcListenError | IamStartupError, IamServices | AppConfig | SqlClient.SqlClient> =
  Layer.merge(IamGrpcServerLive, IamConfiguredAdminLive)

export { IamGrpcAddress }
