import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { IamConfig } from "../config/IamConfig.js"
import type { PlatformConfig } from "../config/PlatformConfig.js"
import type { SecureRandom } from "../platform/SecureRandom.js"
import type { HttpProduct } from "../platform/http/HttpEdge.js"
import { allowHeader, routeMethods, routesOf } from "../platform/http/RouteMethods.js"
import { IamError } from "./domain/IamError.js"
import type { IamServices } from "./IamLive.js"
import { IamRouter } from "./IamRouter.js"
import { errorResponse, IamRestRoutesLive, isRestPath, methodNotAllowedResponse, restEdgeRejection } from "./rest/IamRestRoutes.js"
import { IAM_RPC_PATH, IamRpcRoutesLive } from "./rpc/IamRpcRoutes.js"

/** The IAM product on the shared port. */
export class IamHttp extends Context.Tag("iam/IamHttp")<IamHttp, HttpProduct>() {}

/** The IAM service's paths on the main port: the spec's REST routes, /auth/keys and the RPC group. */
export const ownsIamPath = (path: string): boolean =>
  path.startsWith("/auth/") && (path === IAM_RPC_PATH || isRestPath(path))

const isRouteNotFound = (error: unknown): error is HttpServerError.RouteNotFound =>
  HttpServerError.isServerError(error) && error._tag === "RouteNotFound"

/**
 * REST under /auth/..., /auth/keys and the RPC group on the main port, on IAM's own router and behind IAM's own
 * error handling: every answer is in IAM's envelope, a database outage is UNAVAILABLE as on gRPC, and a body over
 * the limit is refused as resource_exhausted. A path of IAM's with no route for the request's method is a 405 with
 * `Allow` (its methods from the router). A path of IAM's shape that none of its routes takes (an id longer than the
 * 100 characters the router reads) is IAM's not_found, in IAM's envelope like every other answer on its paths.
 */
export const IamHttpLive: Layer.Layer<IamHttp, never, IamServices | PlatformConfig | IamConfig | SecureRandom> = Layer.effect(
  IamHttp,
  Effect.gen(function*() {
    const router = yield* IamRouter.router
    const iam = yield* IamConfig
    const app = yield* HttpRouter.toHttpApp(router)
    const methodsAt = routeMethods(routesOf(router))
    return {
      owns: ownsIamPath,
      app: app.pipe(
        Effect.catchIf(isRouteNotFound, (notFound) => {
          const methods = methodsAt(notFound.request)
          return Effect.succeed(methods.length > 0 ? methodNotAllowedResponse(allowHeader(methods)) : errorResponse(IamError.notFound("not found")))
        }),
        Effect.catchIf(
          (error): error is Exclude<typeof error, HttpServerError.RouteNotFound> => !isRouteNotFound(error),
          () => Effect.succeed(errorResponse(IamError.invalid("bad request")))
        ),
        Effect.catchAllDefect((defect) =>
          Effect.zipRight(Effect.logError("iam: unexpected failure", defect), Effect.succeed(errorResponse(IamError.internal()))))
      ) as HttpProduct["app"],
      refuse: (_request, _requestId, status) => restEdgeRejection(status, iam.maxMessageBytes)
    }
  })
).pipe(Layer.provide([IamRestRoutesLive, IamRpcRoutesLive]), Layer.provide(IamRouter.Live))
