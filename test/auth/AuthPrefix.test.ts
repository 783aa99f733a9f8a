/**
 * The auth API at both `/` and `/auth/v1/` (supabase-js's `createClient(url)` calls `{url}/auth/v1/...`) beside
 * the IAM service's REST routes under `/auth/...`: neither product's routes may shadow the other's. Every route
 * of both contracts is enumerated from the contracts themselves, so a new endpoint is covered without editing
 * this file.
 */
import { HttpApi } from "@effect/platform"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, FastCheck } from "effect"
import { AuthApi } from "../../src/auth/Api.js"
import { AUTH_PREFIX, IAM_NAMESPACE, routeAuthPrefix } from "../../src/auth/http/AuthPrefix.js"
import { REST_ROUTES } from "../../src/iam/rest/IamRestRoutes.js"
import { IAM_RPC_PATH } from "../../src/iam/rpc/IamRpcRoutes.js"
import { IamEndpoints, IamTestServer } from "../iam/support/IamTestServer.js"

interface Route {
  readonly method: string
  readonly path: string
}

const authRoutes: ReadonlyArray<Route> = (() => {
  const routes: Array<Route> = []
  HttpApi.reflect(AuthApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => routes.push({ method: endpoint.method, path: endpoint.path })
  })
  return routes
})()

const iamRoutes: ReadonlyArray<Route> = [
  ...REST_ROUTES,
  { method: "GET", path: "/auth/keys" },
  { method: "POST", path: IAM_RPC_PATH }
]

// Path parameters get a value of the right shape, so a route is matched and its handler answers.
const concrete = (path: string): string =>
  path.replace(/:(\w+)/g, (_, name: string) => (name.endsWith("_id") && path.startsWith("/auth/") ? "1" : "00000000-0000-4000-8000-000000000001"))

const send = (base: string, method: string, path: string) =>
  Effect.promise(async () => {
    const hasBody = method === "POST" || method === "PUT" || method === "PATCH"
    const response = await fetch(`${base}${path}`, {
      method,
      // GET /verify answers 303 to SITE_URL: the answer itself is what is checked.
      redirect: "manual",
      headers: hasBody ? { "content-type": "application/json" } : {},
      ...(hasBody ? { body: "{}" } : {})
    })
    const text = await response.text()
    return { status: response.status, errorCode: response.headers.get("x-sb-error-code"), text }
  })

describe("routeAuthPrefix", () => {
  const segment = FastCheck.stringMatching(/^[a-z0-9_.~-]{1,12}$/)
  const authPath = FastCheck.array(segment, { minLength: 1, maxLength: 4 })
    .map((parts) => `/${parts.join("/")}`)
    .filter((path) => !path.startsWith(IAM_NAMESPACE))

  it.prop("an auth path under /auth/v1 is routed to that path, query and all", { path: authPath, query: FastCheck.option(segment) },
    ({ path, query }) => {
      const suffix = query === null ? "" : `?q=${query}`
      expect(routeAuthPrefix(`${AUTH_PREFIX}${path}${suffix}`)).toEqual({ _tag: "Auth", url: `${path}${suffix}` })
    })

  it.prop("a path outside /auth/v1 is routed as it came", { path: authPath }, ({ path }) => {
    expect(routeAuthPrefix(path)).toEqual({ _tag: "AsIs" })
    expect(routeAuthPrefix(`${IAM_NAMESPACE.slice(0, -1)}${path}`)).toEqual({ _tag: "AsIs" })
  })

  it.prop("nothing under /auth/v1 reaches the IAM namespace", { path: authPath }, ({ path }) => {
    expect(routeAuthPrefix(`${AUTH_PREFIX}/auth${path}`)).toEqual({ _tag: "NotFound" })
  })

  it("the prefix must end at a segment boundary", () => {
    expect(routeAuthPrefix("/auth/v10/signup")).toEqual({ _tag: "AsIs" })
    expect(routeAuthPrefix("/auth/v1")).toEqual({ _tag: "Auth", url: "/" })
    expect(routeAuthPrefix("/auth/v1?x=1")).toEqual({ _tag: "Auth", url: "/?x=1" })
  })
})

describe("the two contracts", () => {
  it("no auth route lives in the IAM namespace and no IAM route under the auth prefix", () => {
    expect(authRoutes.length).toBeGreaterThan(5)
    for (const route of authRoutes) expect(route.path.startsWith(IAM_NAMESPACE)).toBe(false)
    for (const route of iamRoutes) {
      expect(route.path.startsWith(IAM_NAMESPACE)).toBe(true)
      expect(route.path.startsWith(`${AUTH_PREFIX}/`) || route.path === AUTH_PREFIX).toBe(false)
    }
  })
})

layer(IamTestServer(), { timeout: 120_000 })("every route of both products on one port", (it) => {
  it.effect("every auth route answers from the auth API at / and at /auth/v1, alike", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      for (const { method, path } of authRoutes) {
        const atRoot = yield* send(http, method, concrete(path))
        const underPrefix = yield* send(http, method, `${AUTH_PREFIX}${concrete(path)}`)
        const where = `${method} ${path}`
        // The auth API answered (a success, a redirect, or one of its errors), not the router's "no such route".
        expect(atRoot.status < 400 || (atRoot.errorCode !== null && atRoot.errorCode !== "not_found"), where).toBe(true)
        expect({ where, status: underPrefix.status, errorCode: underPrefix.errorCode })
          .toEqual({ where, status: atRoot.status, errorCode: atRoot.errorCode })
      }
    }))

  it.effect("every IAM route answers from the IAM service at its own path, and is not found under /auth/v1", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      for (const { method, path } of iamRoutes) {
        const own = yield* send(http, method, concrete(path))
        const where = `${method} ${path}`
        // IAM's envelope never carries GoTrue's error-code header, and its routes exist.
        expect({ where, errorCode: own.errorCode }).toEqual({ where, errorCode: null })
        expect(own.status === 404 && own.text.includes("\"not_found\"") && own.text.includes("Not found"), where).toBe(false)
        const prefixed = yield* send(http, method, `${AUTH_PREFIX}${concrete(path)}`)
        expect({ where, status: prefixed.status, errorCode: prefixed.errorCode })
          .toEqual({ where, status: 404, errorCode: "not_found" })
      }
    }))
})
