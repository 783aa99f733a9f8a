/**
 * The framework floor, Effect side: an @effect/platform HttpApi with one GET endpoint whose success schema is the
 * user, served by NodeHttpServer, no database. Against NodeHello it shows what the stack itself costs a request.
 */
import { createServer } from "node:http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer, Schema, Scope } from "effect"
import { runClustered } from "../Clustered.js"
import { HELLO_USER } from "./HelloUser.js"

const Metadata = Schema.Record({ key: Schema.String, value: Schema.Unknown })

const Identity = Schema.Struct({
  identity_id: Schema.String,
  id: Schema.String,
  user_id: Schema.String,
  identity_data: Metadata,
  provider: Schema.String,
  last_sign_in_at: Schema.optional(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String,
  email: Schema.optional(Schema.String)
})

const User = Schema.Struct({
  id: Schema.String,
  aud: Schema.String,
  role: Schema.String,
  email: Schema.String,
  email_confirmed_at: Schema.optional(Schema.String),
  phone: Schema.String,
  confirmed_at: Schema.optional(Schema.String),
  last_sign_in_at: Schema.optional(Schema.String),
  app_metadata: Metadata,
  user_metadata: Metadata,
  identities: Schema.Array(Identity),
  created_at: Schema.String,
  updated_at: Schema.String,
  is_anonymous: Schema.Boolean
})

class HelloGroup extends HttpApiGroup.make("hello").add(HttpApiEndpoint.get("user", "/user").addSuccess(User)) {}
class HelloApi extends HttpApi.make("hello").add(HelloGroup) {}

const HelloLive = HttpApiBuilder.group(HelloApi, "hello", (handlers) => handlers.handle("user", () => Effect.succeed(HELLO_USER)))

const ServerLive = HttpApiBuilder.serve().pipe(
  Layer.provide(HttpApiBuilder.api(HelloApi).pipe(Layer.provide(HelloLive))),
  Layer.provide(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: Number(process.env.PORT) }))
)

runClustered(Number(process.env.AUTH_WORKERS ?? "1"), async () => {
  // Building the layer listens; the scope stays open for the life of the process.
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Layer.buildWithScope(ServerLive, scope))
  process.on("SIGTERM", () => process.exit(0))
})
