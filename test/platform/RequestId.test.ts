/**
 * Request ids: inherited from the header named by REQUEST_ID_HEADER when the proxy sends a usable one, otherwise
 * generated; every log line of a request carries it, and a 5xx in the legacy envelope names it as error_id.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { formatLogLine } from "../../src/platform/Logging.js"
import { requestIdFrom } from "../../src/platform/http/RequestId.js"
import { ServerUrl, TestServer } from "../support/TestServer.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

describe("requestIdFrom", () => {
  it("takes the configured header, case-insensitively", () => {
    expect(requestIdFrom({ "x-request-id": "edge-42" }, "X-Request-Id")).toBe("edge-42")
  })

  it("generates an id without a configured header, or when the header is missing or unprintable", () => {
    expect(requestIdFrom({ "x-request-id": "edge-42" }, undefined)).toMatch(UUID)
    expect(requestIdFrom({}, "x-request-id")).toMatch(UUID)
    expect(requestIdFrom({ "x-request-id": "has space" }, "x-request-id")).toMatch(UUID)
    expect(requestIdFrom({ "x-request-id": "x".repeat(201) }, "x-request-id")).toMatch(UUID)
  })
})

const lines: Array<Record<string, unknown>> = []
const CaptureLogs = Layer.merge(
  Logger.replace(Logger.defaultLogger, Logger.make((options) => void lines.push(JSON.parse(formatLogLine(options))))),
  Logger.minimumLogLevel(LogLevel.All)
)

layer(TestServer({ AUTH_REQUEST_ID_HEADER: "X-Request-Id" }).pipe(Layer.provide(CaptureLogs)), {
  timeout: 120_000,
  excludeTestServices: true
})("request ids over HTTP", (it) => {
  it.effect("the access log line carries the inherited id, or a generated one", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      yield* Effect.promise(() => fetch(`${url}/health`, { headers: { "X-Request-Id": "from-the-proxy-1" } }))
      yield* Effect.promise(() => fetch(`${url}/settings`))
      const health = lines.find((l) => l["msg"] === "request" && l["path"] === "/health")
      const settings = lines.find((l) => l["msg"] === "request" && l["path"] === "/settings")
      expect(health?.["request_id"]).toBe("from-the-proxy-1")
      expect(settings?.["request_id"]).toMatch(UUID)
    }))

  it.effect("a 5xx names the request id as error_id, and its error log line carries the same id", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const sql = yield* SqlClient.SqlClient
      yield* sql`ALTER TABLE auth.users RENAME TO users_unavailable`
      const response = yield* Effect.promise(() =>
        fetch(`${url}/token?grant_type=password`, {
          method: "POST",
          headers: { "content-type": "application/json", "X-Request-Id": "failing-request-7" },
          body: JSON.stringify({ email: "nobody@example.com", password: "whatever-it-is" })
        })
      ).pipe(Effect.ensuring(sql`ALTER TABLE auth.users_unavailable RENAME TO users`.pipe(Effect.orDie)))
      expect(response.status).toBe(500)
      expect(yield* Effect.promise(() => response.json())).toEqual({
        code: 500,
        error_code: "unexpected_failure",
        msg: "Unexpected failure, please check server logs for more information",
        error_id: "failing-request-7"
      })
      const logged = lines.find((l) => l["level"] === "error" && l["request_id"] === "failing-request-7")
      expect(logged?.["msg"]).toBe("unexpected failure")
    }))
})
