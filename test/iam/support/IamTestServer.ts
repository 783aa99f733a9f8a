import { createServer } from "node:http"
import { HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer } from "effect"
import { type AppConfig, configLayer, type ConfigTags } from "../../../src/config/AppConfig.js"
import { IamGrpcAddress, iamGrpcServer, IamGrpcServerLive } from "../../../src/iam/grpc/GrpcServer.js"
import { type IamServices, IamServicesLive } from "../../../src/iam/IamLive.js"
import { generatePaserk } from "../../../src/iam/tokens/IamKeys.js"
import type { Database } from "../../../src/platform/sql/Database.js"
import { migrate } from "../../../src/platform/sql/Migrator.js"
import { SecureRandom } from "../../../src/platform/SecureRandom.js"
import { AuthAndIamRoutesLive } from "../../../src/cli/AuthAndIamLive.js"
import { IamOAuthIdentitiesLive } from "../../../src/cli/IamOAuthIdentitiesLive.js"
import { TestDatabase } from "../../support/TestDatabase.js"
import { TestPorts, testConfig } from "../../support/TestServer.js"

/** Base URL of the main HTTP port (REST, /auth/rpc) and the gRPC port's address, both on 127.0.0.1. */
export class IamEndpoints extends Context.Tag("test/IamEndpoints")<IamEndpoints, {
  readonly http: string
  readonly grpc: string
}>() {}

/** One signing key per test process: the config parser wants one, and generating is cheap. */
export const TEST_SIGNING_KEY = Effect.runSync(Effect.provide(generatePaserk, SecureRandom.Live))

export const iamTestEnv = (env: Readonly<Record<string, string>> = {}): Readonly<Record<string, string>> => ({
  AUTH_IAM_GRPC_HOST: "127.0.0.1",
  AUTH_IAM_GRPC_PORT: "0",
  AUTH_IAM_PASETO_SECRET_KEY: TEST_SIGNING_KEY.secret,
  AUTH_IAM_PASETO_KEY_ID: "test-key",
  ...env
})

const EndpointsLive = Layer.effect(
  IamEndpoints,
  Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    const grpc = yield* IamGrpcAddress
    if (server.address._tag !== "TcpAddress") throw new Error("expected a TCP address")
    return { http: `http://127.0.0.1:${server.address.port}`, grpc: `127.0.0.1:${grpc.port}` }
  })
)

/** The IAM service's services without any port, over a migrated database (the caller provides it). */
export const IamServicesTest = (config: AppConfig) =>
  IamServicesLive.pipe(
    // The composition's adapter over the auth server's providers: Off unless the env sets AUTH_IAM_OAUTH_REDIRECT_URI.
    Layer.provideMerge(IamOAuthIdentitiesLive),
    Layer.provideMerge(TestPorts(config)),
    Layer.provideMerge(configLayer(config)),
    Layer.orDie
  )

/** The IAM stack over a database it is given, already migrated (see IamTestServer). */
export const IamTestServerOver = (
  env: Readonly<Record<string, string>> = {},
  grpcPort?: Parameters<typeof iamGrpcServer>[0]
): Layer.Layer<IamEndpoints | IamServices | ConfigTags, never, Database> => {
  const config = testConfig(iamTestEnv(env))
  return EndpointsLive.pipe(
    Layer.provideMerge(Layer.merge(AuthAndIamRoutesLive(config), grpcPort === undefined ? IamGrpcServerLive : iamGrpcServer(grpcPort))),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 })),
    Layer.provideMerge(IamServicesTest(config)),
    Layer.orDie
  ) as Layer.Layer<IamEndpoints | IamServices | ConfigTags, never, Database>
}

/**
 * The whole IAM stack as cli/ServerLive.ts wires it: the main HTTP port with the auth API plus the IAM REST and RPC
 * routes, and the gRPC port; both on 127.0.0.1 and free ports, over a fresh migrated database.
 */
export const IamTestServer = (
  env: Readonly<Record<string, string>> = {}
): Layer.Layer<IamEndpoints | IamServices | ConfigTags | Database> => {
  const config = testConfig(iamTestEnv(env))
  const Migrated = Layer.effectDiscard(Effect.orDie(migrate({ namespace: config.db.namespace })))
  return IamTestServerOver(env).pipe(
    Layer.provideMerge(Migrated),
    Layer.provideMerge(TestDatabase),
    Layer.orDie
  ) as Layer.Layer<IamEndpoints | IamServices | ConfigTags | Database>
}
