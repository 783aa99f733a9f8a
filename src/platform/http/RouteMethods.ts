import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"

/** A route as a router holds it: its method ("*" for every one) and its path pattern. */
export interface RouteShape {
  readonly method: string
  readonly path: string
}

/** The order an Allow header lists methods in (HEAD after GET, which answers it). */
const METHOD_ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

/**
 * The Allow header for a path that has routes for these methods: each once, in a fixed order, with HEAD beside GET
 * because the router answers HEAD with the GET route. Empty for none.
 */
export const allowHeader = (methods: Iterable<string>): string => {
  const present = new Set([...methods].map((method) => method.toUpperCase()))
  if (present.has("GET")) present.add("HEAD")
  const known = METHOD_ORDER.filter((method) => present.has(method))
  const others = [...present].filter((method) => !METHOD_ORDER.includes(method)).sort()
  return [...known, ...others].join(", ")
}

/**
 * The methods a router has routes for at a request's path, for a 405 to the request no route took: an empty list
 * means no route has the path, which stays a 404.
 *
 * Each method is asked of a router that holds that method's routes, each taking any method and doing nothing, so
 * the path is matched by the router's own rules (parameters, repeated and trailing slashes, case, parameter length),
 * never by a second reading of them that could disagree. The routers are built once; they run only for a request
 * that was not found. A route for every method ("*") would have taken the request, so it names none here. The probe
 * asks with GET whatever the request's method was: the router matches only the methods it knows, so a method it
 * does not (QUERY) would otherwise find no path and be a 404 where it is a 405.
 */
export const routeMethods = (routes: Iterable<RouteShape>): (request: HttpServerRequest.HttpServerRequest) => ReadonlyArray<string> => {
  const byMethod = new Map<string, Array<string>>()
  for (const route of routes) {
    if (route.method === "*") continue
    byMethod.set(route.method, [...(byMethod.get(route.method) ?? []), route.path])
  }
  const probes = [...byMethod].map(([method, paths]) => {
    const router = HttpRouter.fromIterable(paths.map((path) => HttpRouter.makeRoute("GET", path as HttpRouter.PathInput, HttpServerResponse.empty())))
    return { method, app: Effect.runSync(HttpRouter.toHttpApp(router)) }
  })
  return (request) => {
    const asGet = Object.create(request, { method: { value: "GET" } }) as HttpServerRequest.HttpServerRequest
    return probes.flatMap(({ app, method }) =>
      Exit.isSuccess(Effect.runSyncExit(Effect.provideService(app, HttpServerRequest.HttpServerRequest, asGet))) ? [method] : []
    )
  }
}

/** The routes a router holds, for routeMethods. */
export const routesOf = (router: HttpRouter.HttpRouter<any, any>): ReadonlyArray<RouteShape> =>
  [...router.routes].map((route) => ({ method: route.method, path: route.path }))
