import { createClient } from "@connectrpc/connect"
import { createGrpcTransport } from "@connectrpc/connect-node"
import { expect, layer } from "@effect/vitest"
import { SpanKind } from "@opentelemetry/api"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Context, Effect, Layer, Schedule } from "effect"
import { AuthService } from "../../src/gen/gatehouse/iam/v1/iam_pb.js"
import { TelemetryLive } from "../../src/platform/Telemetry.js"
import { VERSION } from "../../src/Package.js"
import { adminJwt } from "../auth/acceptance/AcceptanceKit.js"
import { IamEndpoints, IamTestServer, iamTestEnv } from "../iam/support/IamTestServer.js"
import { freePort, parsePrometheus } from "../support/Prometheus.js"
import { testConfig } from "../support/TestServer.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const json = (url: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
  promise(async () => {
    const response = await fetch(url, {
      method: init.method ?? "GET",
      redirect: "manual",
      headers: { "content-type": "application/json", ...init.headers },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
    })
    return { status: response.status, body: await response.text() }
  })

const exporter = new InMemorySpanExporter()
const tracingEnv = { AUTH_TRACING_ENABLED: "true", AUTH_MAILER_AUTOCONFIRM: "true" }
const Traced = IamTestServer(tracingEnv).pipe(
  Layer.provide(TelemetryLive(testConfig(iamTestEnv(tracingEnv)), { role: "single", spanProcessor: new SimpleSpanProcessor(exporter) })),
  Layer.orDie
)

const serverSpans = () => exporter.getFinishedSpans().filter((span) => span.kind === SpanKind.SERVER)

// A span ends as its response is written, which may be a moment after the client has read it.
const spanNamed = (name: string, where: (span: ReadableSpan) => boolean = () => true) =>
  Effect.suspend(() => {
    const found = serverSpans().filter((span) => span.name === name && where(span))
    return found.length === 1 ? Effect.succeed(found[0]!) : Effect.fail(`${found.length} server spans named ${name}`)
  }).pipe(Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 100 }), Effect.orDie)

const childrenOf = (parent: ReadableSpan) =>
  exporter.getFinishedSpans().filter((span) => span.parentSpanContext?.spanId === parent.spanContext().spanId)

/** Every span under `root`, however deep. */
const descendantsOf = (root: ReadableSpan): Array<ReadableSpan> => childrenOf(root).flatMap((child) => [child, ...descendantsOf(child)])

layer(Traced, { timeout: 120_000 })("tracing (TRACING_ENABLED)", (it) => {
  it.effect("gives every HTTP request one server span named by its route, with its parameters and database child spans", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      const email = `traced-${Date.now()}@example.com`
      const password = "a password that must never be recorded"
      const signup = yield* json(`${http}/auth/v1/signup`, { method: "POST", body: { email, password } })
      expect(signup.status).toBe(200)
      const session = JSON.parse(signup.body) as { access_token: string; refresh_token: string; user: { id: string } }

      const span = yield* spanNamed("POST /signup")
      expect(span.attributes).toMatchObject({ "http.method": "POST", "http.route": "/signup", "http.response.status_code": 200 })
      const below = descendantsOf(span)
      expect(below.some((child) => child.name === "sql.execute")).toBe(true)
      expect(below.every((child) => child.spanContext().traceId === span.spanContext().traceId)).toBe(true)

      const admin = adminJwt()
      const user = yield* json(`${http}/admin/users/${session.user.id}`, { headers: { authorization: `Bearer ${admin}`, apikey: admin } })
      expect(user.status).toBe(200)
      const adminSpan = yield* spanNamed("GET /admin/users/{user_id}")
      expect(adminSpan.attributes).toMatchObject({
        "http.method": "GET",
        "http.route": "/admin/users/{user_id}",
        "http.route.params.user_id": session.user.id,
        "http.response.status_code": 200
      })

      // Tokens travel in query strings, headers and redirects: none of it may reach a span.
      const verify = yield* json(`${http}/verify?token=query-secret-0123456789&type=signup&redirect_to=http://localhost:3000`)
      expect(verify.status).toBeGreaterThanOrEqual(300)
      yield* spanNamed("GET /verify")
      const refreshed = yield* json(`${http}/token?grant_type=refresh_token`, {
        method: "POST",
        body: { refresh_token: session.refresh_token },
        headers: { authorization: `Bearer ${session.access_token}` }
      })
      expect(refreshed.status).toBe(200)
      const newTokens = JSON.parse(refreshed.body) as { access_token: string; refresh_token: string }
      yield* spanNamed("POST /token")
      const recorded = JSON.stringify(exporter.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes, events: s.events })))
      for (const secret of [password, session.access_token, session.refresh_token, admin, "query-secret-0123456789", newTokens.access_token, newTokens.refresh_token]) {
        expect(recorded).not.toContain(secret)
      }
    }))

  it.effect("joins the caller's trace from a traceparent header", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
      const parentId = "00f067aa0ba902b7"
      const settings = yield* json(`${http}/settings`, { headers: { traceparent: `00-${traceId}-${parentId}-01` } })
      expect(settings.status).toBe(200)
      const span = yield* spanNamed("GET /settings", (s) => s.spanContext().traceId === traceId)
      expect(span.parentSpanContext?.spanId).toBe(parentId)
    }))

  it.effect("traces IAM calls on the gRPC port under the method's name, without the password", () =>
    Effect.gen(function*() {
      const { grpc } = yield* IamEndpoints
      const auth = createClient(AuthService, createGrpcTransport({ baseUrl: `http://${grpc}` }))
      const password = "iam password never recorded"
      const registered = yield* promise(() => auth.register({ username: "traced", password, email: "traced-iam@example.com" }))
      const refused = yield* promise(() =>
        auth.login({ identifier: { case: "username", value: "traced" }, password: "wrong password here" }).then(() => "OK", () => "refused"))
      expect(refused).toBe("refused")
      const register = yield* spanNamed("/gatehouse.iam.v1.AuthService/Register")
      expect(register.attributes).toMatchObject({
        "rpc.system": "grpc",
        "rpc.service": "gatehouse.iam.v1.AuthService",
        "rpc.method": "Register",
        "rpc.grpc.status_code": 0
      })
      expect(descendantsOf(register).some((child) => child.name === "sql.execute")).toBe(true)
      const login = yield* spanNamed("/gatehouse.iam.v1.AuthService/Login")
      expect(login.attributes["rpc.grpc.status_code"]).toBe(16)
      const recorded = JSON.stringify(exporter.getFinishedSpans().map((s) => ({ attributes: s.attributes, events: s.events })))
      for (const secret of [password, "wrong password here", registered.token!.accessToken]) expect(recorded).not.toContain(secret)
    }))
})

class ScrapePort extends Context.Tag("test/ScrapePort")<ScrapePort, number>() {}

const Scraped = Layer.unwrapEffect(Effect.map(Effect.promise(freePort), (port) => {
  const env = {
    AUTH_METRICS_ENABLED: "true",
    AUTH_METRICS_EXPORTER: "prometheus",
    AUTH_OTEL_EXPORTER_PROMETHEUS_HOST: "127.0.0.1",
    AUTH_OTEL_EXPORTER_PROMETHEUS_PORT: String(port),
    AUTH_MAILER_AUTOCONFIRM: "true"
  }
  return IamTestServer(env).pipe(
    Layer.provide(TelemetryLive(testConfig(iamTestEnv(env)))),
    Layer.merge(Layer.succeed(ScrapePort, port)),
    Layer.orDie
  )
}))

layer(Scraped, { timeout: 120_000 })("metrics (METRICS_EXPORTER=prometheus)", (it) => {
  it.effect("serves Prometheus text on / with the request, auth and Node runtime series", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      const port = yield* ScrapePort
      const email = `scraped-${Date.now()}@example.com`
      const signedUp = yield* json(`${http}/auth/v1/signup`, { method: "POST", body: { email, password: "scraped password" } })
      expect(signedUp.status, signedUp.body).toBe(200)
      const wrong = yield* json(`${http}/auth/v1/token?grant_type=password`, { method: "POST", body: { email, password: "not it at all" } })
      expect(wrong.status).toBe(400)
      const signedIn = yield* json(`${http}/token?grant_type=password`, { method: "POST", body: { email, password: "scraped password" } })
      expect(signedIn.status).toBe(200)

      const page = yield* promise(() => fetch(`http://127.0.0.1:${port}/`).then(async (r) => ({ status: r.status, type: r.headers.get("content-type"), text: await r.text() })))
      expect(page.status, page.text).toBe(200)
      expect(page.type).toContain("text/plain")
      const samples = parsePrometheus(page.text)
      const sample = (name: string, labels: Record<string, string>) =>
        samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
      expect(sample("http_server_requests_total", { http_route: "/signup", http_request_method: "POST", http_response_status_code: "200" })?.value).toBe(1)
      expect(sample("http_server_requests_total", { http_route: "/token", http_response_status_code: "400" })?.value).toBe(1)
      expect(sample("http_server_request_duration_seconds_count", { http_route: "/token", http_response_status_code: "200" })?.value).toBe(1)
      expect(sample("http_server_request_duration_seconds_bucket", { http_route: "/token", http_response_status_code: "200", le: "+Inf" })?.value).toBe(1)
      expect(sample("auth_sign_ups_total", { provider: "email" })?.value).toBeGreaterThanOrEqual(1)
      expect(sample("auth_sign_ins_total", { grant_type: "password" })?.value).toBeGreaterThanOrEqual(1)
      expect(sample("nodejs_eventloop_delay_p99", {})).toBeDefined()
      expect(samples.some((s) => s.name.startsWith("v8js_memory_heap_used"))).toBe(true)
      expect(sample("target_info", { auth_version: VERSION, service_name: "gatehouse" })).toBeDefined()
    }))
})
