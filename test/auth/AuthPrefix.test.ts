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
import { allowHeader } from "../../src/platform/http/RouteMethods.js"
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

/** An OAuth-style error's code (`{error, error_description}`, RFC 6749 §5.2), which carries no x-sb-error-code header. */
const oauthError = (text: string): string | null => {
  try {
    const body = JSON.parse(text)
    return typeof body?.error === "string" && typeof body?.error_description === "string" ? body.error : null
  } catch {
    return null
  }
}

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
    return { status: response.status, errorCode: response.headers.get("x-sb-error-code") ?? oauthError(text), text }
  })

/** The methods a contract has at a concrete path: those of its patterns that match it, segment by segment. */
const methodsAt = (routes: ReadonlyArray<Route>, path: string): ReadonlyArray<string> =>
  routes.filter((route) => {
    const want = route.path.split("/")
    const got = path.split("/")
    return want.length === got.length && want.every((segment, i) => segment.startsWith(":") || segment === got[i])
  }).map((route) => route.method)

/** A method the path has no route for, if there is one. */
const wrongMethod = (methods: ReadonlyArray<string>): string | undefined =>
  ["DELETE", "PATCH", "PUT", "POST", "GET"].find((method) => !methods.includes(method))

const distinctPaths = (routes: ReadonlyArray<Route>): ReadonlyArray<string> => [...new Set(routes.map((route) => concrete(route.path)))]

const answer = (base: string, path: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`${base}${path}`, { redirect: "manual", ...init })
    const text = await response.text()
    return { status: response.status, headers: response.headers, json: text === "" ? undefined : JSON.parse(text) }
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

  it.effect("a wrong method at every auth path is a 405 with the contract's methods in Allow, at / and at /auth/v1, in GoTrue's envelope", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      let checked = 0
      for (const path of distinctPaths(authRoutes)) {
        const methods = methodsAt(authRoutes, path)
        const method = wrongMethod(methods)
        if (method === undefined) continue
        for (const at of [path, `${AUTH_PREFIX}${path}`]) {
          const got = yield* answer(http, at, { method })
          expect({ at: `${method} ${at}`, status: got.status, allow: got.headers.get("allow"), errorCode: got.headers.get("x-sb-error-code"), body: got.json })
            .toEqual({ at: `${method} ${at}`, status: 405, allow: allowHeader(methods), errorCode: "method_not_allowed",
              body: { code: 405, error_code: "method_not_allowed", msg: "Method not allowed" } })
        }
        checked++
      }
      expect(checked).toBeGreaterThan(20)
      // auth-js's API version gets the newer envelope, as for every other error.
      const versioned = yield* answer(http, "/auth/v1/token", { method: "GET", headers: { "x-supabase-api-version": "2024-01-01" } })
      expect(versioned.status).toBe(405)
      expect(versioned.headers.get("allow")).toBe("POST")
      expect(versioned.json).toEqual({ code: "method_not_allowed", message: "Method not allowed" })
    }))

  it.effect("the system paths say which methods they take: /health, /settings, /.well-known/jwks.json, /user, /admin/users/{id}", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      const allowOf = (method: string, path: string) => Effect.map(answer(http, path, { method }), (got) => [got.status, got.headers.get("allow")])
      expect(yield* allowOf("POST", "/health")).toEqual([405, "GET, HEAD"])
      expect(yield* allowOf("DELETE", "/auth/v1/health")).toEqual([405, "GET, HEAD"])
      expect(yield* allowOf("PUT", "/settings")).toEqual([405, "GET, HEAD"])
      expect(yield* allowOf("POST", "/.well-known/jwks.json")).toEqual([405, "GET, HEAD"])
      expect(yield* allowOf("POST", "/user")).toEqual([405, "GET, HEAD, PUT"])
      expect(yield* allowOf("PATCH", `/admin/users/${concrete(":user_id")}`)).toEqual([405, "GET, HEAD, POST, PUT, DELETE"])
      expect(yield* allowOf("DELETE", "/docs")).toEqual([405, "GET, HEAD"])
      // HEAD is answered by the GET route.
      expect((yield* answer(http, "/health", { method: "HEAD" })).status).toBe(200)
    }))

  it.effect("a wrong method at every IAM path is a 405 with its routes' methods in Allow, in IAM's envelope", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      let checked = 0
      for (const path of distinctPaths(iamRoutes)) {
        const methods = methodsAt(iamRoutes, path)
        const method = wrongMethod(methods)!
        const got = yield* answer(http, path, { method })
        expect({ at: `${method} ${path}`, status: got.status, allow: got.headers.get("allow"), errorCode: got.headers.get("x-sb-error-code"), body: got.json })
          .toEqual({ at: `${method} ${path}`, status: 405, allow: allowHeader(methods), errorCode: null,
            body: { code: "unimplemented", message: "method not allowed" } })
        checked++
      }
      expect(checked).toBeGreaterThan(10)
      expect((yield* answer(http, "/auth/validate", { method: "PUT" })).headers.get("allow")).toBe("GET, HEAD, POST")
      expect((yield* answer(http, "/auth/roles/7", { method: "GET" })).headers.get("allow")).toBe("DELETE")
    }))

  it.effect("unknown paths stay 404 whatever the method, and a preflight stays CORS's", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      for (const method of ["GET", "POST", "DELETE"]) {
        for (const path of ["/no/such/route", "/auth/nope", "/auth/roles/7/nope", `${AUTH_PREFIX}/auth/register`, "/health/x"]) {
          const got = yield* answer(http, path, { method })
          expect({ at: `${method} ${path}`, status: got.status, allow: got.headers.get("allow"), errorCode: got.headers.get("x-sb-error-code") })
            .toEqual({ at: `${method} ${path}`, status: 404, allow: null, errorCode: "not_found" })
        }
      }
      for (const path of ["/signup", `${AUTH_PREFIX}/signup`, "/auth/register"]) {
        const preflight = yield* answer(http, path, {
          method: "OPTIONS",
          headers: { Origin: "https://app.example.com", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "apikey,content-type" }
        })
        expect([preflight.status, preflight.headers.get("access-control-allow-origin"), preflight.headers.get("allow")])
          .toEqual([204, "https://app.example.com", null])
        // An OPTIONS that is no preflight is a method like any other.
        const plain = yield* answer(http, path, { method: "OPTIONS" })
        expect([plain.status, plain.headers.get("allow")]).toEqual([405, "POST"])
      }
    }))
})
