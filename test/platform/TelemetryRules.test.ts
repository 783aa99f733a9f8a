import { Code } from "@connectrpc/connect"
import { describe, expect, it } from "@effect/vitest"
import { AggregationTemporality, DataPointType, type ScopeMetrics } from "@opentelemetry/sdk-metrics"
import { diag } from "@opentelemetry/api"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, FastCheck as fc, Layer, Logger, LogLevel, Option, Schedule } from "effect"
import { parseKeyValueList } from "../../src/config/KeyValueList.js"
import { grpcStatusName } from "../../src/iam/grpc/ConnectFailure.js"
import { mergeWorkerMetrics } from "../../src/platform/process/ClusterMetrics.js"
import { routeParams, routeTemplate } from "../../src/platform/http/RouteTemplate.js"
import { TelemetryLive } from "../../src/platform/Telemetry.js"
import { testConfig } from "../support/TestServer.js"

const segment = fc.stringMatching(/^[a-z0-9_-]{1,12}$/)
const name = fc.stringMatching(/^[a-z][a-z_]{0,10}$/)
/** A router pattern: fixed segments and named parameters, e.g. /admin/users/:user_id/factors/:factor_id. */
const pattern = fc.array(fc.oneof(segment.map((s) => ({ fixed: s })), name.map((n) => ({ param: n }))), { minLength: 1, maxLength: 6 })
  .filter((parts) => {
    const names = parts.flatMap((p) => ("param" in p ? [p.param] : []))
    return new Set(names).size === names.length
  })

describe("RouteTemplate", () => {
  it.prop("writes every :param as {param} and keeps the fixed segments", [pattern], ([parts]) => {
    const router = "/" + parts.map((p) => ("param" in p ? `:${p.param}` : p.fixed)).join("/")
    const openApi = "/" + parts.map((p) => ("param" in p ? `{${p.param}}` : p.fixed)).join("/")
    expect(routeTemplate(router)).toBe(openApi)
  })

  it.prop("reads back each parameter's value from a matching path, with or without the /auth/v1 prefix", [
    pattern,
    fc.array(fc.string({ minLength: 1, maxLength: 20 }), { minLength: 6, maxLength: 6 }),
    fc.boolean()
  ], ([parts, values, prefixed]) => {
    const router = "/" + parts.map((p) => ("param" in p ? `:${p.param}` : p.fixed)).join("/")
    const path = (prefixed ? "/auth/v1/" : "/") + parts.map((p, i) => ("param" in p ? encodeURIComponent(values[i]!) : p.fixed)).join("/")
    const expected = Object.fromEntries(parts.flatMap((p, i) => ("param" in p ? [[p.param, values[i]!]] : [])))
    expect(routeParams(router, path)).toStrictEqual(expected)
  })

  it("gives no parameters for a path that does not line up with the pattern", () => {
    expect(routeParams("/admin/users/:user_id", "/admin/factors/abc")).toStrictEqual({})
    expect(routeParams("/admin/users/:user_id", "/abc")).toStrictEqual({})
    expect(routeParams("/admin/users/:user_id", "/admin/users/%E0%A4%A")).toStrictEqual({ user_id: "%E0%A4%A" })
  })
})

describe("KeyValueList (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS)", () => {
  const encode = (pairs: Record<string, string>) =>
    Object.entries(pairs).map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(value)}`).join(",")

  it.prop("reads back any pairs written with percent-encoding", [
    fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }).filter((k) => k.trim() === k && k !== "" && k !== "__proto__"), fc.string({ maxLength: 30 }).filter((v) => v.trim() === v))
  ], ([pairs]) => {
    expect(parseKeyValueList(encode(pairs))).toStrictEqual(Option.some(pairs))
  })

  it("trims, skips empty entries, and refuses an entry without = or with a broken escape", () => {
    expect(parseKeyValueList(" a = 1 ,, b=x%3Dy%2Cz ")).toStrictEqual(Option.some({ a: "1", b: "x=y,z" }))
    expect(parseKeyValueList("a=1,b")).toStrictEqual(Option.none())
    expect(parseKeyValueList("=1")).toStrictEqual(Option.none())
    expect(parseKeyValueList("a=%E0%A4%A")).toStrictEqual(Option.none())
  })
})

describe("grpcStatusName", () => {
  it("spells statuses as gRPC does", () => {
    expect(grpcStatusName(0)).toBe("OK")
    expect(grpcStatusName(Code.Canceled)).toBe("CANCELLED")
    expect(grpcStatusName(Code.InvalidArgument)).toBe("INVALID_ARGUMENT")
    expect(grpcStatusName(Code.Unauthenticated)).toBe("UNAUTHENTICATED")
    expect(grpcStatusName(Code.DeadlineExceeded)).toBe("DEADLINE_EXCEEDED")
  })
})

describe("mergeWorkerMetrics", () => {
  const counter = (metricName: string, points: ReadonlyArray<{ attributes: Record<string, string>; value: number }>) => ({
    descriptor: { name: metricName, description: "", unit: "", type: "COUNTER", valueType: 1 },
    aggregationTemporality: AggregationTemporality.CUMULATIVE,
    dataPointType: DataPointType.SUM,
    isMonotonic: true,
    dataPoints: points.map((p) => ({ startTime: [0, 0], endTime: [1, 0], attributes: p.attributes, value: p.value }))
  })
  const scope = (scopeName: string, metrics: ReadonlyArray<ReturnType<typeof counter>>) =>
    ({ scope: { name: scopeName }, metrics }) as unknown as ScopeMetrics

  it.prop("keeps every worker's data point, labelled with its worker, under one metric per scope and name", [
    fc.array(fc.array(fc.record({ metric: fc.constantFrom("a", "b"), scope: fc.constantFrom("s1", "s2"), value: fc.nat() }), { maxLength: 6 }), {
      minLength: 1,
      maxLength: 4
    })
  ], ([workers]) => {
    const byWorker = workers.map((points, i) => {
      // One metric per scope and name within a worker, as a reader produces.
      const grouped = new Map<string, Array<{ value: number }>>()
      for (const p of points) grouped.set(`${p.scope}/${p.metric}`, [...(grouped.get(`${p.scope}/${p.metric}`) ?? []), { value: p.value }])
      const scopes = new Map<string, Array<ReturnType<typeof counter>>>()
      for (const [key, values] of grouped) {
        const [scopeName, metricName] = key.split("/") as [string, string]
        scopes.set(scopeName, [...(scopes.get(scopeName) ?? []), counter(metricName, values.map((v) => ({ attributes: {}, value: v.value })))])
      }
      return { worker: String(i + 1), scopeMetrics: [...scopes].map(([s, metrics]) => scope(s, metrics)) }
    })
    const merged = mergeWorkerMetrics(byWorker)
    const names = merged.flatMap((s) => s.metrics.map((m) => `${s.scope.name}/${m.descriptor.name}`))
    expect(new Set(names).size).toBe(names.length)
    for (const [i, points] of workers.entries()) {
      for (const key of new Set(points.map((p) => `${p.scope}/${p.metric}`))) {
        const [scopeName, metricName] = key.split("/") as [string, string]
        const metric = merged.find((s) => s.scope.name === scopeName)!.metrics.find((m) => m.descriptor.name === metricName)!
        const mine = metric.dataPoints.filter((p) => p.attributes["worker"] === String(i + 1)).map((p) => p.value)
        expect(mine).toStrictEqual(points.filter((p) => `${p.scope}/${p.metric}` === key).map((p) => p.value))
      }
    }
  })
})

describe("DEBUG: the OpenTelemetry SDK's diagnostics", () => {
  const logged = (debug: boolean) =>
    Effect.gen(function*() {
      const lines: Array<{ level: string; message: string }> = []
      const capture = Logger.make(({ logLevel, message }) =>
        void lines.push({ level: logLevel.label, message: String(Array.isArray(message) ? message[0] : message) }))
      const config = testConfig({ AUTH_TRACING_ENABLED: "true", AUTH_DEBUG: String(debug) })
      yield* Effect.scoped(Effect.gen(function*() {
        yield* Layer.build(TelemetryLive(config, { role: "single", spanProcessor: new SimpleSpanProcessor(new InMemorySpanExporter()) }))
        diag.debug("probe at debug")
        diag.warn("probe at warn")
        // The SDK's lines are logged by fibers of their own: wait until the warning, which always gets through, is in.
        yield* Effect.suspend(() => (lines.some((l) => l.message.includes("probe at warn")) ? Effect.void : Effect.fail("not yet"))).pipe(
          Effect.retry({ schedule: Schedule.spaced("10 millis"), times: 200 }),
          Effect.orDie
        )
      })).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, capture)), Effect.provide(Logger.minimumLogLevel(LogLevel.All)))
      return lines.filter((l) => l.message.startsWith("opentelemetry: probe"))
    })

  it.effect("are logged (at info) only with DEBUG=true; the SDK's warnings always are", () =>
    Effect.gen(function*() {
      expect(yield* logged(true)).toStrictEqual([
        { level: "INFO", message: "opentelemetry: probe at debug" },
        { level: "WARN", message: "opentelemetry: probe at warn" }
      ])
      expect(yield* logged(false)).toStrictEqual([{ level: "WARN", message: "opentelemetry: probe at warn" }])
    }))
})
