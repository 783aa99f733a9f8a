/**
 * /openapi.json and /docs describe the server as it runs: its version, its bearer auth, every auth route (enumerated
 * from the contract) and, when the IAM service is on, every IAM route on the port (enumerated from REST_ROUTES).
 */
import { readFileSync } from "node:fs"
import { HttpApi } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { AuthApi } from "../../src/auth/Api.js"
import { AdminAuthenticated, InviterAuthenticated } from "../../src/auth/contract/AdminAuthenticated.js"
import { Authenticated } from "../../src/auth/contract/Authenticated.js"
import { AUTH_PREFIX, IAM_NAMESPACE } from "../../src/auth/http/AuthPrefix.js"
import { methodOf } from "../../src/iam/IamContract.js"
import { REST_ROUTES } from "../../src/iam/rest/IamRestRoutes.js"
import { IAM_RPC_PATH } from "../../src/iam/rpc/IamRpcRoutes.js"
import { IamEndpoints, IamTestServer } from "../iam/support/IamTestServer.js"
import { ServerUrl, TestServer } from "../support/TestServer.js"

const packageVersion = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version

interface AuthRoute {
  readonly method: string
  readonly path: string
  readonly authenticated: boolean
}

const authRoutes: ReadonlyArray<AuthRoute> = (() => {
  const routes: Array<AuthRoute> = []
  HttpApi.reflect(AuthApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, middleware }) =>
      routes.push({ method: endpoint.method, path: endpoint.path, authenticated: [...middleware].some((tag) => [Authenticated.key, AdminAuthenticated.key, InviterAuthenticated.key].includes(tag.key)) })
  })
  return routes
})()

const PUBLIC_OPERATIONS = [["GET", "/health"], ["GET", "/settings"], ["POST", "/signup"], ["POST", "/token"], ["GET", "/.well-known/jwks.json"]]

const openApiPath = (path: string) => path.replace(/:(\w+)/g, "{$1}")

const fetchText = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    return { status: response.status, contentType: response.headers.get("content-type"), text: await response.text() }
  })

const fetchSpec = (base: string) => Effect.map(fetchText(`${base}/openapi.json`), ({ text }) => JSON.parse(text) as Record<string, any>)

/** The spec Swagger UI is given: the JSON in the page's `swagger-spec` script element. */
const embeddedSpec = (html: string): unknown => {
  const match = /<script id="swagger-spec" type="application\/json">([\s\S]*?)<\/script>/.exec(html)
  expect(match).not.toBeNull()
  return JSON.parse(match![1]!)
}

/** The user's JWT ("bearer") or an admin's ("serviceRole", the service_role key): two schemes, so a client can hold both. */
const usesBearer = (operation: Record<string, any>): boolean =>
  (operation["security"] ?? []).some((requirement: Record<string, unknown>) => "bearer" in requirement || "serviceRole" in requirement)

layer(IamTestServer(), { timeout: 120_000 })("the OpenAPI document with the IAM service on", (it) => {
  it.effect("info.version is the package's version", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      const spec = yield* fetchSpec(http)
      expect(spec["info"]["version"]).toBe(packageVersion)
    }))

  it.effect("the User group needs a bearer JWT and no public operation does", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      const spec = yield* fetchSpec(http)
      expect(spec["components"]["securitySchemes"]["bearer"]).toMatchObject({ type: "http", scheme: "bearer", bearerFormat: "JWT" })
      expect(spec["components"]["securitySchemes"]["serviceRole"]).toMatchObject({ type: "http", scheme: "bearer", bearerFormat: "JWT" })
      expect(spec["security"]).toEqual([])
      const authenticated = authRoutes.filter((route) => route.authenticated)
      // The user's own routes, and every admin route (all under /admin, plus /invite).
      const admin = (path: string) => path.startsWith("/admin/") || path === "/invite"
      expect(authenticated.filter((r) => !admin(r.path)).map((r) => `${r.method} ${r.path}`).sort())
        .toEqual([
          "DELETE /factors/:factor_id",
          "DELETE /passkeys/:passkey_id",
          "DELETE /user/identities/:identity_id",
          "DELETE /user/oauth/grants",
          "DELETE /user/sessions/:session_id",
          "GET /oauth/authorizations/:authorization_id",
          "GET /oauth/userinfo",
          "GET /passkeys",
          "GET /reauthenticate",
          "GET /user",
          "GET /user/identities/authorize",
          "GET /user/oauth/grants",
          "GET /user/sessions",
          "PATCH /passkeys/:passkey_id",
          "POST /factors",
          "POST /factors/:factor_id/challenge",
          "POST /factors/:factor_id/verify",
          "POST /logout",
          "POST /oauth/authorizations/:authorization_id/consent",
          "POST /passkeys/registration/options",
          "POST /passkeys/registration/verify",
          "PUT /user"
        ])
      expect(authRoutes.filter((r) => admin(r.path) && !r.authenticated)).toEqual([])
      // Token introspection authenticates its caller itself: the service role's JWT, or an OAuth client's credentials.
      expect(spec["paths"]["/oauth/introspect"]["post"]["security"]).toEqual([{ serviceRole: [] }, { oauthClient: [] }])
      expect(spec["components"]["securitySchemes"]["oauthClient"]).toMatchObject({ type: "http", scheme: "basic" })
      for (const route of authRoutes) {
        if (route.path === "/oauth/introspect") continue
        const operation = spec["paths"][openApiPath(route.path)][route.method.toLowerCase()]
        expect({ route, bearer: usesBearer(operation) }).toEqual({ route, bearer: route.authenticated })
        if (route.authenticated) expect(operation["security"]).toEqual(admin(route.path) ? [{ serviceRole: [] }] : [{ bearer: [] }])
      }
      for (const [method, path] of PUBLIC_OPERATIONS) {
        expect(spec["paths"][path!][method!.toLowerCase()]["security"]).toEqual([])
      }
    }))

  it.effect("every route of the auth contract is a path, and the /auth/v1 prefix is a server", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      const spec = yield* fetchSpec(http)
      expect(authRoutes.length).toBeGreaterThan(5)
      for (const route of authRoutes) {
        expect(spec["paths"][openApiPath(route.path)]?.[route.method.toLowerCase()], `${route.method} ${route.path}`).toBeDefined()
      }
      expect(spec["servers"].map((server: { url: string }) => server.url)).toEqual(["/", AUTH_PREFIX])
    }))

  it.effect("every IAM route on the port is a path under the IAM tag, with its proto messages", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      const spec = yield* fetchSpec(http)
      const schemas = spec["components"]["schemas"]
      for (const route of REST_ROUTES) {
        const where = `${route.method} ${route.path}`
        const item = spec["paths"][openApiPath(route.path)]
        expect(item, where).toBeDefined()
        // Served at the root only, never under the auth API's /auth/v1.
        expect(item["servers"], where).toEqual([{ url: "/" }])
        const operation = item[route.method.toLowerCase()]
        expect(operation, where).toBeDefined()
        expect(operation["tags"], where).toEqual(["IAM"])
        expect(operation["summary"], where).toBe(route.operation)
        const params = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1])
        expect(operation["parameters"].map((p: { name: string; in: string }) => `${p.in}:${p.name}`), where)
          .toEqual(params.map((name) => `path:${name}`))
        const { input, output } = methodOf(route.operation)
        expect(input.typeName).toBe(`gatehouse.iam.v1.${route.operation}Request`)
        if (route.method === "POST") {
          expect(operation["requestBody"]["content"]["application/json"]["schema"], where).toEqual({ $ref: `#/components/schemas/${input.typeName}` })
          expect(schemas[input.typeName], where).toMatchObject({ type: "object" })
        } else {
          expect(operation["requestBody"], where).toBeUndefined()
        }
        expect(operation["responses"]["200"]["content"]["application/json"]["schema"], where)
          .toEqual({ $ref: `#/components/schemas/${output.typeName}` })
        expect(schemas[output.typeName], where).toMatchObject({ type: "object" })
      }
      expect(spec["paths"]["/auth/keys"]?.["get"]).toBeDefined()
      expect(spec["paths"][IAM_RPC_PATH]?.["post"]).toBeDefined()
      expect(spec["tags"].map((tag: { name: string }) => tag.name)).toContain("IAM")
    }))

  it.effect("/docs answers HTML that embeds the same document", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      const spec = yield* fetchSpec(http)
      const docs = yield* fetchText(`${http}/docs`)
      expect(docs.status).toBe(200)
      expect(docs.contentType).toContain("text/html")
      expect(docs.text).toContain(packageVersion)
      expect(embeddedSpec(docs.text)).toEqual(spec)
    }))

  it.effect("the document's own text links nowhere outside the repository", () =>
    Effect.gen(function*() {
      const { http } = yield* IamEndpoints
      const spec = yield* fetchText(`${http}/openapi.json`)
      expect(spec.text).not.toMatch(/https?:\/\//)
    }))
})

layer(TestServer(), { timeout: 120_000 })("the OpenAPI document with the IAM service off", (it) => {
  it.effect("every 429 requires Retry-After, and the routes that send mail or texts name the per-recipient codes", () =>
    Effect.gen(function*() {
      const spec = yield* fetchSpec(yield* ServerUrl)
      const tooMany = Object.entries(spec["paths"] as Record<string, Record<string, any>>).flatMap(([path, operations]) =>
        Object.entries(operations).flatMap(([method, operation]) =>
          operation?.["responses"]?.["429"] === undefined ? [] : [[`${method.toUpperCase()} ${path}`, operation["responses"]["429"]] as const]))
      expect(tooMany.length).toBeGreaterThan(5)
      for (const [route, response] of tooMany) {
        expect({ route, header: response["headers"]?.["retry-after"] }).toMatchObject({ route, header: { required: true } })
      }
      const codesAt = (route: string) => JSON.stringify(tooMany.find(([name]) => name === route)?.[1] ?? {})
      for (const route of ["POST /signup", "POST /otp", "POST /magiclink", "POST /recover", "POST /resend", "POST /invite", "PUT /user", "GET /reauthenticate"]) {
        expect({ route, mail: codesAt(route).includes("over_email_recipient_rate_limit") }).toEqual({ route, mail: true })
      }
      for (const route of ["POST /signup", "POST /otp", "POST /resend", "PUT /user", "GET /reauthenticate", "POST /factors/{factor_id}/challenge"]) {
        expect({ route, text: codesAt(route).includes("over_sms_recipient_rate_limit") }).toEqual({ route, text: true })
      }
    }))

  it.effect("describes no IAM route, since none is served", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const spec = yield* fetchSpec(url)
      expect(Object.keys(spec["paths"]).filter((path) => path.startsWith(IAM_NAMESPACE))).toEqual([])
      expect(spec["tags"].map((tag: { name: string }) => tag.name)).not.toContain("IAM")
      expect(spec["info"]["version"]).toBe(packageVersion)
      const docs = yield* fetchText(`${url}/docs`)
      expect(embeddedSpec(docs.text)).toEqual(spec)
    }))
})
