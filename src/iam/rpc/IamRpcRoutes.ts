import * as Headers from "@effect/platform/Headers"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { RpcSerialization, RpcServer } from "@effect/rpc"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { clientHeaderName, requestClient } from "../../platform/http/RateLimitKey.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { OPERATIONS } from "../domain/Guards.js"
import { anyHandler, IamHandlers } from "../IamHandlers.js"
import { IamRouter } from "../IamRouter.js"
import { IamRpcs } from "./IamRpcs.js"

/** Where the RPC group is served on the main HTTP port. */
export const IAM_RPC_PATH = "/auth/rpc"

/**
 * The header that carries, from the HTTP request to the handlers, the client the login throttle counts. The RPC
 * server hands its handlers the HTTP headers merged with headers each message carries, the message's winning, so a
 * header of a name a client could know could be forged from inside the body, past any proxy. This name is drawn at
 * start and never sent out, and the HTTP request's own value is always replaced.
 */
class ClientHeader extends Effect.Service<ClientHeader>()("iam/rpc/ClientHeader", {
  effect: Effect.map(Effect.flatMap(SecureRandom, (random) => random.uuid()), (id) => ({ name: `x-gatehouse-client-${id}` }))
}) {}

/** The RPC group's handlers: the shared handlers, with the caller's `authorization` header as credentials. */
const IamRpcHandlersLive = IamRpcs.toLayer(Effect.gen(function*() {
  const handlers = yield* IamHandlers
  const { name } = yield* ClientHeader
  return Object.fromEntries(OPERATIONS.map((op) => [op, (payload: never, options: { readonly headers: Record<string, string | undefined> }) =>
    anyHandler(handlers, op)(payload, { authorization: options.headers["authorization"], client: options.headers[name] || undefined })
  ])) as never
}))

/** POST /auth/rpc (NDJSON serialization), added to the main HTTP port's router. */
export const IamRpcRoutesLive: Layer.Layer<never, never, IamHandlers | PlatformConfig | SecureRandom> = IamRouter.use((router) =>
  Effect.gen(function*() {
    const app = yield* RpcServer.toHttpApp(IamRpcs)
    const { name } = yield* ClientHeader
    const forwardedHeader = clientHeaderName((yield* PlatformConfig).api.clientHeader)
    yield* router.post(IAM_RPC_PATH, Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const client = requestClient(request, forwardedHeader)
      const headers = Headers.set(request.headers, name, client ?? "")
      return Effect.provideService(app, HttpServerRequest.HttpServerRequest, request.modify({ headers }))
    }))
  })
).pipe(Layer.provide(IamRpcHandlersLive), Layer.provide(RpcSerialization.layerNdjson), Layer.provide(ClientHeader.Default))
