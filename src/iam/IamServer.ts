import * as Layer from "effect/Layer"
import type { IamConfig } from "../config/IamConfig.js"
import type { PlatformConfig } from "../config/PlatformConfig.js"
import { type GrpcListenError, IamGrpcAddress, IamGrpcServerLive } from "./grpc/GrpcServer.js"
import { IamConfiguredAdminLive, type IamServices } from "./IamLive.js"
import type { IamStartupError } from "./tokens/IamKeys.js"

/** The IAM service's own port and start-up work, over its services. */
export const IamBackgroundLive: Layer.Layer<IamGrpcAddress, GrpcListenError | IamStartupError, IamServices | PlatformConfig | IamConfig> =
  Layer.merge(IamGrpcServerLive, IamConfiguredAdminLive)

export { IamGrpcAddress }
