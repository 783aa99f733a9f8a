import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option, Redacted, Schedule } from "effect"
import { PostgresDatabase } from "../../../src/platform/sql/Database.js"
import { recordFigure } from "../../reliability/Figures.js"
import { type CuttableProxy, migratedBehindProxy } from "../../support/CuttableProxy.js"
import { externalDatabaseUrl } from "../../support/TestDatabase.js"
import { ServerUrl, testConfig, TestServerOver } from "../../support/TestServer.js"

// /health asks the database, so a load balancer stops sending requests to an instance that can only fail them.

class Outage extends Context.Tag("test/Outage")<Outage, CuttableProxy>() {}

const OverProxy = Layer.unwrapScoped(Effect.gen(function*() {
  const { proxy } = yield* migratedBehindProxy(testConfig().db.namespace)
  return TestServerOver().pipe(
    Layer.provide(PostgresDatabase({ url: Redacted.make(proxy.url), maxPoolSize: 4 }).pipe(Layer.orDie)),
    Layer.merge(Layer.succeed(Outage, proxy))
  )
}))

const health = (base: string) =>
  Effect.promise(() => fetch(`${base}/health`).then(async (r) => ({ status: r.status, body: await r.text() })))

describe.skipIf(Option.isNone(externalDatabaseUrl))("GET /health and the database", () => {
  layer(OverProxy, { timeout: 60_000 })((it) => {
    it.effect("answers 503 database_unavailable (health and every other endpoint) while the database cannot be reached, without details, and 200 once it can", () =>
      Effect.gen(function*() {
        const base = yield* ServerUrl
        const proxy = yield* Outage
        const healthy = yield* health(base)
        expect(healthy.status).toBe(200)
        expect(JSON.parse(healthy.body)).toMatchObject({ name: "Gatehouse" })

        proxy.cut()
        recordFigure("auth: database outage", "faults", 1)
        const down = yield* health(base)
        expect(down.status).toBe(503)
        const { error_id, ...envelope } = JSON.parse(down.body) as Record<string, unknown>
        expect(envelope).toStrictEqual({ code: 503, error_code: "database_unavailable", msg: "The database cannot be reached" })
        expect(String(error_id)).toMatch(/^[0-9a-f-]{36}$/)
        const proxyPort = new URL(proxy.url).port
        for (const detail of [proxyPort, "ECONN", "postgres", "127.0.0.1"]) expect(down.body).not.toContain(detail)

        // Every other endpoint says the same during the outage, in GoTrue's envelope, not a 500.
        const signIn = yield* Effect.promise(() =>
          fetch(`${base}/token?grant_type=password`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ email: "nobody@example.com", password: "some password" })
          }).then(async (r) => ({ status: r.status, body: await r.json() as Record<string, unknown> })))
        expect(signIn.status).toBe(503)
        expect(signIn.body).toMatchObject({ code: 503, error_code: "database_unavailable", msg: "The database cannot be reached" })

        proxy.restore()
        const restored = Date.now()
        // The pool reconnects on its own: no restart.
        const back = yield* health(base).pipe(
          Effect.filterOrFail((answer) => answer.status === 200, () => "still down"),
          Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 50 }),
          Effect.orDie
        )
        recordFigure("auth: database outage", "recovery_ms", Date.now() - restored)
        expect(JSON.parse(back.body)).toMatchObject({ name: "Gatehouse" })
        const after = yield* Effect.promise(() =>
          fetch(`${base}/token?grant_type=password`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ email: "nobody@example.com", password: "some password" })
          }).then((r) => r.status))
        expect(after).toBe(400)
      }))
  })
})
