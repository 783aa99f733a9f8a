import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, FastCheck } from "effect"
import { allowHeader, routeMethods, type RouteShape } from "../../src/platform/http/RouteMethods.js"

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const

// Few segment names, so that generated paths hit the generated routes, their parameters and their near misses often.
const literal = FastCheck.constantFrom("users", "roles", "a", "b", "me")
const template = FastCheck.array(FastCheck.oneof(literal, FastCheck.constantFrom(":id", ":role_id")), { minLength: 0, maxLength: 3 })
  .map((segments) => `/${segments.join("/")}`)
const route = FastCheck.record({ method: FastCheck.constantFrom(...METHODS), path: template })
const table = FastCheck.uniqueArray(route, { maxLength: 8, selector: ({ method, path }) => `${method} ${path}` })
  // Two patterns that differ only in a parameter's name are one route to the router, which refuses the second.
  .filter((routes) => {
    const shapes = routes.map(({ method, path }) => `${method} ${path.replace(/:\w+/g, ":")}`)
    return new Set(shapes).size === shapes.length
  })

const segments = FastCheck.array(FastCheck.oneof(literal, FastCheck.constantFrom("42", "x-y", "Users")), { maxLength: 4 })
const path = FastCheck.record({
  segments,
  trailing: FastCheck.constantFrom("", "/"),
  query: FastCheck.constantFrom("", "?page=2")
}).map(({ query, segments, trailing }) => `/${segments.join("/")}${segments.length > 0 ? trailing : ""}${query}`)

const requestFor = (method: string, url: string): HttpServerRequest.HttpServerRequest =>
  HttpServerRequest.fromWeb(new Request(`http://127.0.0.1${url}`, { method }))

/** Whether the platform's router, holding every route of the table at once, takes this request. */
const routedByRouter = (routes: ReadonlyArray<RouteShape>, method: string, url: string): boolean => {
  const router = HttpRouter.fromIterable(
    routes.map((r) => HttpRouter.makeRoute(r.method as HttpRouter.Route<never, never>["method"], r.path as HttpRouter.PathInput, HttpServerResponse.empty()))
  )
  const app = Effect.runSync(HttpRouter.toHttpApp(router))
  return Exit.isSuccess(Effect.runSyncExit(Effect.provideService(app, HttpServerRequest.HttpServerRequest, requestFor(method, url))))
}

/**
 * An independent reading, for plain paths (at least one segment, no trailing slash, where find-my-way's empty
 * parameters cannot arise): segment by segment, case aside, a parameter taking any one segment.
 */
const matchesByModel = (pattern: string, url: string): boolean => {
  const want = pattern.split("/").filter((s) => s !== "")
  const got = url.split("?")[0]!.split("/").slice(1)
  return want.length === got.length && got.every((s, i) => want[i]!.startsWith(":") || want[i]!.toLowerCase() === s.toLowerCase())
}
const plainPath = FastCheck.record({ segments: segments.filter((s) => s.length > 0), query: FastCheck.constantFrom("", "?page=2") })
  .map(({ query, segments }) => `/${segments.join("/")}${query}`)

describe("routeMethods", () => {
  it.prop("lists a method exactly when the router would route that method at the path, whatever method was sent", {
    routes: table,
    url: path,
    sent: FastCheck.constantFrom(...METHODS, "HEAD", "OPTIONS")
  }, ({ routes, sent, url }) => {
    const listed = routeMethods(routes)(requestFor(sent, url))
    for (const method of METHODS) {
      expect(listed.includes(method), `${method} ${url}`).toBe(routedByRouter(routes, method, url))
    }
    expect(new Set(listed).size).toBe(listed.length)
  })

  it.prop("agrees with a segment-by-segment reading of the patterns on plain paths", { routes: table, url: plainPath }, ({ routes, url }) => {
    const listed = new Set(routeMethods(routes)(requestFor("OPTIONS", url)))
    const expected = new Set(routes.filter((r) => matchesByModel(r.path, url)).map((r) => r.method))
    expect(listed).toEqual(expected)
  })

  it("a route for every method names none, and no routes name none", () => {
    expect(routeMethods([{ method: "*", path: "/a" }, { method: "GET", path: "/b" }])(requestFor("POST", "/a"))).toEqual([])
    expect(routeMethods([])(requestFor("GET", "/"))).toEqual([])
  })
})

describe("allowHeader", () => {
  it.prop("lists each method once, in one order whatever the input's, with HEAD exactly when GET or HEAD is there", {
    methods: FastCheck.array(FastCheck.constantFrom(...METHODS, "HEAD", "get", "Delete"), { maxLength: 10 })
  }, ({ methods }) => {
    const header = allowHeader(methods)
    const listed = header === "" ? [] : header.split(", ")
    const upper = new Set(methods.map((m) => m.toUpperCase()))
    expect(new Set(listed)).toEqual(new Set([...upper, ...(upper.has("GET") ? ["HEAD"] : [])]))
    expect(listed.length).toBe(new Set(listed).size)
    expect(allowHeader([...methods].reverse())).toBe(header)
  })

  it("orders as the methods are usually written", () => {
    expect(allowHeader(["DELETE", "PUT", "GET"])).toBe("GET, HEAD, PUT, DELETE")
    expect(allowHeader(["POST"])).toBe("POST")
  })
})
