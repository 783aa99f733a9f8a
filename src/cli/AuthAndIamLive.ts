import type { Server } from "node:http"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { ConsoleIam, type IamPermissionListing } from "../auth/admin/console/ConsoleIam.js"
import { AuthHttp, AuthHttpLive } from "../auth/AuthHttp.js"
import type { AppConfig } from "../config/AppConfig.js"
import { Roles, type PermissionRecord } from "../iam/access/Roles.js"
import { IamGrpcServerLive } from "../iam/grpc/GrpcServer.js"
import { IamHttp, IamHttpLive } from "../iam/IamHttp.js"
import { IamServicesLive } from "../iam/IamLive.js"
import { IamBackgroundLive } from "../iam/IamServer.js"
import { documentIamRoutes } from "../iam/rest/IamRestDocs.js"
import { IamOAuthIdentitiesLive } from "./IamOAuthIdentitiesLive.js"
import { HttpEdgeLive } from "../platform/http/HttpEdge.js"
import { documentPages, edgeSettings, HttpServerLive, pages, PagesLive } from "./ServerLive.js"

/*
 * The composition with the IAM service served, apart from ServerLive.ts: ServerLive imports it only when IAM_ENABLED,
 * so a server of the auth product alone never loads the IAM service's code.
 */

const listing = (permission: PermissionRecord): IamPermissionListing => ({
  name: permission.name,
  description: permission.description,
  resource: permission.resource,
  action: permission.action
})

/** The admin console's IAM page, read from the IAM service this process serves: every role with what it grants. */
const ConsoleIamLive = Layer.effect(
  ConsoleIam,
  Effect.map(Roles, (roles) => ({
    directory: Option.some(Effect.gen(function*() {
      const permissions = yield* roles.listPermissions
      const all = yield* roles.listRoles
      const granted = yield* Effect.forEach(all, (role) => roles.permissionsOf(role.id), { concurrency: 4 })
      return {
        roles: all.map((role, index) => ({ name: role.name, description: role.description, permissions: granted[index]!.map(listing) })),
        permissions: permissions.map(listing)
      }
    }).pipe(Effect.orDie))
  }))
)

/**
 * Both products on one port: the IAM service owns its REST and RPC paths under /auth/, the auth API every other
 * path (and `/auth/v1/`); /openapi.json and /docs describe both. The pages come first; each owns only its own path.
 * `node`: as for AuthRoutesLive.
 */
export const AuthAndIamRoutesLive = (config: AppConfig, node?: Server) =>
  HttpEdgeLive(edgeSettings(config, node), [...pages(config), IamHttp, AuthHttp]).pipe(
    Layer.provide(IamHttpLive),
    Layer.provide(AuthHttpLive({ documentOthers: (spec) => documentPages(config)(documentIamRoutes(spec)) })),
    Layer.provide(PagesLive(config, ConsoleIamLive))
  )

/**
 * Both products' ports over the IAM services: the HTTP port, and the gRPC port. A single process also makes the
 * configured IAM admin (IamBackgroundLive); in a cluster the primary has made it.
 */
export const AuthAndIamServerLive = (config: AppConfig, role: "single" | "worker") =>
  Layer.merge(
    HttpServerLive(config, (node) => AuthAndIamRoutesLive(config, node), { logAddress: role === "single" }),
    role === "single" ? IamBackgroundLive : IamGrpcServerLive
  ).pipe(Layer.provide(IamServicesLive), Layer.provide(IamOAuthIdentitiesLive))
