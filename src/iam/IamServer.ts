import { Layer } from "effect"
import type { AppConfig } from "../config/AppConfig.js"
import { type GrpcListenError, IamGrpcAddress, IamGrpcServerLive } from "./grpc/GrpcServer.js"
import { IamConfiguredAdminLive, type IamServices } from "./IamLive.js"
import type { IamStartupError } from "./tokens/IamKeys.js"

/** The IAM service's own port and start-up work, over its services. */
export const IamBackgroundLive: Layer.Layer<IamGrpcAddress, GrpcListenError | IamStartupError, IamServices | AppConfig> =
  Layer.merge(IamGrpcServerLive, IamConfiguredAdminLive)

export { IamGrpcAddress }
