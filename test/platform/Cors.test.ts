import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { type CorsRequest, decideCors, gotrueCorsPolicy, isPreflight } from "../../src/platform/http/Cors.js"

const policy = gotrueCorsPolicy(["X-Custom-Header"])
const allowedHeaderNames = [...policy.allowedHeaders, "Origin"]
const allowedLower = new Set(allowedHeaderNames.map((h) => h.toLowerCase()))

const origin = FastCheck.oneof(
  FastCheck.webUrl().map((url) => new URL(url).origin),
  FastCheck.constantFrom("null", "http://localhost:3000", "https://app.example.com")
)
const maybeOrigin = FastCheck.option(origin, { nil: undefined })

// A header name in random case, from the allowed list or not.
const randomCase = (name: string) =>
  FastCheck.array(FastCheck.boolean(), { minLength: name.length, maxLength: name.length }).map((upper) =>
    [...name].map((c, i) => (upper[i] ? c.toUpperCase() : c.toLowerCase())).join("")
  )
const headerName = FastCheck.oneof(
  FastCheck.constantFrom(...allowedHeaderNames).chain(randomCase),
  FastCheck.constantFrom("X-Forbidden", "Cookie", "X-Requested-With", "Accept-Language"),
  FastCheck.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,20}$/)
)
const method = FastCheck.oneof(
  FastCheck.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "TRACE", "CONNECT"),
  FastCheck.constantFrom("get", "post", "Patch", "delete", "head")
)

const preflight = FastCheck.record({
  origin: maybeOrigin,
  method,
  headers: FastCheck.array(headerName, { maxLength: 6 }),
  separator: FastCheck.constantFrom(",", ", ", " ,  ")
}).map(({ headers, method, origin, separator }): CorsRequest => ({
  method: "OPTIONS",
  headers: {
    ...(origin === undefined ? {} : { origin }),
    "access-control-request-method": method,
    ...(headers.length > 0 ? { "access-control-request-headers": headers.join(separator) } : {})
  }
}))

const actual = FastCheck.record({ origin: maybeOrigin, method }).map(({ method, origin }): CorsRequest => ({
  method,
  headers: origin === undefined ? {} : { origin }
}))

const anyRequest = FastCheck.oneof(preflight, actual)

const requestedHeaders = (request: CorsRequest): Array<string> =>
  (request.headers["access-control-request-headers"] ?? "").split(",").map((h) => h.trim()).filter((h) => h !== "")

describe("decideCors", () => {
  it.prop("echoes the request Origin when it allows it, and never *", { request: anyRequest }, ({ request }) => {
    const decision = decideCors(policy, request)
    const allowOrigin = decision.headers["access-control-allow-origin"]
    if (allowOrigin !== undefined) {
      expect(allowOrigin).toBe(request.headers["origin"])
      expect(allowOrigin).not.toBe("*")
      expect(decision.headers["access-control-allow-credentials"]).toBe("true")
    }
  })

  it.prop("never allows an origin when the request has none", { request: anyRequest }, ({ request }) => {
    const { origin: _ignored, ...withoutOrigin } = request.headers
    const decision = decideCors(policy, { ...request, headers: withoutOrigin })
    expect(decision.headers).not.toHaveProperty("access-control-allow-origin")
    expect(decision.headers).not.toHaveProperty("access-control-allow-credentials")
  })

  it.prop(
    "grants a preflight iff the method is allowed and every requested header is listed (any case)",
    { request: preflight.filter((r) => r.headers["origin"] !== undefined) },
    ({ request }) => {
      const decision = decideCors(policy, request)
      const requestedMethod = request.headers["access-control-request-method"]!.toUpperCase()
      const methodAllowed = requestedMethod === "OPTIONS" || policy.allowedMethods.includes(requestedMethod)
      const headers = requestedHeaders(request)
      const headersAllowed = headers.every((h) => allowedLower.has(h.toLowerCase()))

      expect(decision._tag).toBe("Preflight")
      expect(decision.headers["access-control-allow-origin"] !== undefined).toBe(methodAllowed && headersAllowed)
      if (methodAllowed && headersAllowed) {
        expect(decision.headers["access-control-allow-methods"]).toBe(requestedMethod)
        expect(decision.headers["access-control-allow-headers"]).toBe(headers.length > 0 ? headers.join(", ") : undefined)
      } else {
        expect(decision.headers).not.toHaveProperty("access-control-allow-methods")
        expect(decision.headers).not.toHaveProperty("access-control-allow-headers")
      }
    }
  )

  it("grants a browser preflight with configured extra headers, echoing only what was asked", () => {
    const granted = decideCors(gotrueCorsPolicy(["apikey"]), {
      method: "OPTIONS",
      headers: {
        origin: "http://localhost:3000",
        "access-control-request-method": "POST",
        "access-control-request-headers": "apikey, authorization, content-type, x-client-info, x-supabase-api-version"
      }
    })
    expect(granted).toStrictEqual({
      _tag: "Preflight",
      headers: {
        vary: "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
        "access-control-allow-origin": "http://localhost:3000",
        "access-control-allow-methods": "POST",
        "access-control-allow-headers": "apikey, authorization, content-type, x-client-info, x-supabase-api-version",
        "access-control-allow-credentials": "true"
      }
    })
  })

  it("exposes GoTrue's headers on an actual request with an Origin", () => {
    expect(decideCors(policy, { method: "GET", headers: { origin: "https://app.example.com" } })).toStrictEqual({
      _tag: "Actual",
      headers: {
        vary: "Origin",
        "access-control-allow-origin": "https://app.example.com",
        "access-control-allow-credentials": "true",
        "access-control-expose-headers": "X-Total-Count, Link, X-Supabase-Api-Version"
      }
    })
    expect(decideCors(policy, { method: "GET", headers: {} })).toStrictEqual({
      _tag: "Actual",
      headers: { vary: "Origin" }
    })
  })

  it("treats only OPTIONS with Access-Control-Request-Method as a preflight", () => {
    expect(isPreflight({ method: "OPTIONS", headers: { "access-control-request-method": "GET" } })).toBe(true)
    expect(isPreflight({ method: "options", headers: { "access-control-request-method": "GET" } })).toBe(true)
    expect(isPreflight({ method: "OPTIONS", headers: {} })).toBe(false)
    expect(isPreflight({ method: "POST", headers: { "access-control-request-method": "GET" } })).toBe(false)
  })
})
