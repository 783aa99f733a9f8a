import type { HandlerContext, ServiceImpl } from "@connectrpc/connect"
import { Code, ConnectError } from "@connectrpc/connect"
import { create } from "@bufbuild/protobuf"
import {
  Health,
  type HealthCheckRequest,
  type HealthCheckResponse,
  HealthCheckResponse_ServingStatus as Status,
  HealthCheckResponseSchema
} from "../../gen/grpc/health/v1/health_pb.js"

/**
 * grpc.health.v1 (grpc/doc/health-checking.md). `servingStatus` answers for the whole server ("") and each
 * named service alike: they share one process and one database. An unknown service is NOT_FOUND on Check
 * and SERVICE_UNKNOWN on Watch, as the protocol says. Watch sends the current status and stays open; the
 * status only changes by the process going away, which ends the stream.
 */
export const healthService = (
  services: ReadonlyArray<string>,
  servingStatus: (signal: AbortSignal) => Promise<Status>
): ServiceImpl<typeof Health> => {
  const known = new Set(["", ...services])
  return {
    check: async (request: HealthCheckRequest, context: HandlerContext): Promise<HealthCheckResponse> => {
      if (!known.has(request.service)) throw new ConnectError("unknown service", Code.NotFound)
      return create(HealthCheckResponseSchema, { status: await servingStatus(context.signal) })
    },
    watch: async function*(request: HealthCheckRequest, context: HandlerContext) {
      yield create(HealthCheckResponseSchema, {
        status: known.has(request.service) ? await servingStatus(context.signal) : Status.SERVICE_UNKNOWN
      })
      await new Promise<void>((resolve) => context.signal.addEventListener("abort", () => resolve(), { once: true }))
    }
  }
}

export { Health, Status as ServingStatus }
