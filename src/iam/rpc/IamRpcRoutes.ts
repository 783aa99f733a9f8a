import { RpcSerialization, RpcServer } from "@effect/rpc"
import { Effect, Layer } from "effect"
import { OPERATIONS } from "../domain/Guards.js"
import { anyHandler, IamHandlers } from "../IamHandlers.js"
import { IamRouter } from "../IamRouter.js"
import { IamRpcs } from "./IamRpcs.js"

/** Where the RPC group is served on the main HTTP port. */
export const IAM_RPC_PATH = "/auth/rpc"

/** The RPC group's handlers: the shared handlers, with the caller's `authorization` header as credentials. */
export const IamRpcHandlersLive = IamRpcs.toLayer(Effect.gen(function*() {
  const handlers = yield* IamHandlers
  return Object.fromEntries(OPERATIONS.map((op) => [op, (payload: never, options: { readonly headers: Record<string, string | undefined> }) =>
    anyHandler(handlers, op)(payload, { authorization: options.headers["authorization"] })
  ])) as never
}))

/** POST /auth/rpc (NDJSON serialization), added to the main HTTP port's router. */
export const IamRpcRoutesLive: Layer.Layer<never, never, IamHandlers> = IamRouter.use((router) =>
  Effect.gen(function*() {
    const app = yield* RpcServer.toHttpApp(IamRpcs)
    yield* router.post(IAM_RPC_PATH, app)
  })
).pipe(Layer.provide(IamRpcHandlersLive), Layer.provide(RpcSerialization.layerNdjson))
