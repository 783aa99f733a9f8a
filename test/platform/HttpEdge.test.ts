import { createServer } from "node:http"
import { HttpServer, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { gotrueCorsPolicy } from "../../src/platform/http/Cors.js"
import { HttpEdgeLive, type HttpProduct } from "../../src/platform/http/HttpEdge.js"

// A product whose app dies (a bug its own error handling missed): the edge still answers in its envelope.
class Broken extends Context.Tag("test/Broken")<Broken, HttpProduct>() {}

const BrokenLive = Layer.succeed(Broken, {
  owns: () => true,
  app: Effect.die(new Error("a bug with a secret: hunter2")),
  refuse: (_request, requestId, status, code, message) =>
    HttpServerResponse.unsafeJson({ code: status, error_code: code, msg: message, error_id: requestId }, { status })
})

const Served = Layer.unwrapEffect(Effect.map(HttpServer.HttpServer, (server) => {
  const address = server.address
  return Layer.succeed(BaseUrl, address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : "")
})).pipe(
  Layer.provideMerge(HttpEdgeLive({
    cors: gotrueCorsPolicy([]),
    requestIdHeader: Option.none(),
    operatorToken: Option.none(),
    telemetry: { tracing: false, metrics: false }
  }, [Broken])),
  Layer.provideMerge(BrokenLive),
  Layer.provideMerge(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 }))
)

class BaseUrl extends Context.Tag("test/BaseUrl")<BaseUrl, string>() {}

layer(Served)("the HTTP edge", (it) => {
  it.effect("answers a defect no product caught with a 500 in the owner's envelope, without the defect's text", () =>
    Effect.gen(function*() {
      const base = yield* BaseUrl
      const answer = yield* Effect.promise(() => fetch(`${base}/anything`).then(async (r) => ({ status: r.status, body: await r.text() })))
      expect(answer.status).toBe(500)
      expect(JSON.parse(answer.body)).toMatchObject({ code: 500, error_code: "unexpected_failure" })
      expect(answer.body).not.toContain("hunter2")
    }))
})
