import { Code, ConnectError, createClient } from "@connectrpc/connect"
import { createGrpcTransport } from "@connectrpc/connect-node"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option, Redacted, Schedule } from "effect"
import { AuthService } from "../../src/gen/gatehouse/iam/v1/iam_pb.js"
import { PostgresDatabase } from "../../src/platform/sql/Database.js"
import { recordFigure } from "../reliability/Figures.js"
import { type CuttableProxy, migratedBehindProxy } from "../support/CuttableProxy.js"
import { externalDatabaseUrl } from "../support/TestDatabase.js"
import { testConfig } from "../support/TestServer.js"
import { IamEndpoints, IamTestServerOver, iamTestEnv } from "./support/IamTestServer.js"

// A database outage is UNAVAILABLE on the gRPC port and 503 on REST: the client may retry; and it passes by itself.

class Outage extends Context.Tag("test/Outage")<Outage, CuttableProxy>() {}

const OverProxy = Layer.unwrapScoped(Effect.gen(function*() {
  const { proxy } = yield* migratedBehindProxy(testConfig(iamTestEnv()).db.namespace)
  return IamTestServerOver().pipe(
    Layer.provide(PostgresDatabase({ url: Redacted.make(proxy.url), maxPoolSize: 4 }).pipe(Layer.orDie)),
    Layer.merge(Layer.succeed(Outage, proxy))
  )
}))

const codeOf = (call: () => Promise<unknown>) =>
  Effect.promise(() => call().then(() => "OK", (e: unknown) => Code[ConnectError.from(e).code]))

describe.skipIf(Option.isNone(externalDatabaseUrl))("IAM during a database outage", () => {
  layer(OverProxy, { timeout: 60_000 })((it) => {
    it.effect("answers UNAVAILABLE over gRPC and 503 over REST while the database is away, and serves again once it is back", () =>
      Effect.gen(function*() {
        const { grpc, http } = yield* IamEndpoints
        const proxy = yield* Outage
        const auth = createClient(AuthService, createGrpcTransport({ baseUrl: `http://${grpc}` }))
        const login = () => auth.login({ identifier: { case: "username", value: "nobody" }, password: "some password" })
        expect(yield* codeOf(login)).toBe("Unauthenticated")

        proxy.cut()
        recordFigure("iam: database outage", "faults", 1)
        expect(yield* codeOf(login)).toBe("Unavailable")
        const rest = yield* Effect.promise(() =>
          fetch(`${http}/auth/login`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ username: "nobody", password: "some password" })
          }).then(async (r) => ({ status: r.status, body: await r.text() })))
        expect(rest.status).toBe(503)
        expect(rest.body).not.toContain(new URL(proxy.url).port)

        proxy.restore()
        const restored = Date.now()
        const back = yield* codeOf(login).pipe(
          Effect.filterOrFail((code) => code === "Unauthenticated", (code) => code),
          Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 50 }),
          Effect.orDie
        )
        recordFigure("iam: database outage", "recovery_ms", Date.now() - restored)
        expect(back).toBe("Unauthenticated")
      }))
  })
})
