import { describe, expect, it } from "@effect/vitest"
import { API_VERSION_HEADER_NAME, DEFAULT_HEADERS } from "@supabase/auth-js/dist/module/lib/constants.js"
import { corsHeaders } from "@supabase/supabase-js/cors"
import { FastCheck } from "effect"
import { compileCorsOrigins, corsOriginProblem, isAllowedOrigin } from "../../src/domain/CorsOrigins.js"
import { type CorsRequest, decideCors, gotrueCorsPolicy, isPreflight } from "../../src/platform/http/Cors.js"

const policy = gotrueCorsPolicy(["X-Custom-Header"])
const allowedHeaderNames = [...policy.allowedHeaders, "Origin"]
const allowedLower = new Set(allowedHeaderNames.map((h) => h.toLowerCase()))

/**
 * Every header the installed supabase-js sends on its own calls (its published CORS list, which it keeps in step
 * with what it sends) and auth-js on auth calls (its default headers and the API version), read from the packages
 * so that a new one fails here, not in a browser.
 */
const supabaseHeaders = [...new Set([
  ...corsHeaders["Access-Control-Allow-Headers"].split(",").map((h) => h.trim()),
  ...Object.keys(DEFAULT_HEADERS),
  API_VERSION_HEADER_NAME
].map((h) => h.toLowerCase()))]

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
    const granted = decideCors(gotrueCorsPolicy(["X-Custom-Header"]), {
      method: "OPTIONS",
      headers: {
        origin: "http://localhost:3000",
        "access-control-request-method": "POST",
        "access-control-request-headers": "apikey,authorization,content-type,x-client-info,x-custom-header,x-supabase-api-version"
      }
    })
    expect(granted).toStrictEqual({
      _tag: "Preflight",
      headers: {
        vary: "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
        "access-control-allow-origin": "http://localhost:3000",
        "access-control-allow-methods": "POST",
        "access-control-allow-headers": "apikey, authorization, content-type, x-client-info, x-custom-header, x-supabase-api-version",
        "access-control-allow-credentials": "true"
      }
    })
  })

  it("exposes GoTrue's headers and the error code header on an actual request with an Origin", () => {
    expect(decideCors(policy, { method: "GET", headers: { origin: "https://app.example.com" } })).toStrictEqual({
      _tag: "Actual",
      headers: {
        vary: "Origin",
        "access-control-allow-origin": "https://app.example.com",
        "access-control-allow-credentials": "true",
        "access-control-expose-headers": "X-Total-Count, Link, X-Supabase-Api-Version, X-Sb-Error-Code"
      }
    })
    expect(decideCors(policy, { method: "GET", headers: {} })).toStrictEqual({
      _tag: "Actual",
      headers: { vary: "Origin" }
    })
  })

  it.prop(
    "with no configuration, grants every preflight supabase-js and auth-js send, from any origin, in any order and case",
    {
      origin: origin.filter((o) => o !== "null"),
      method: FastCheck.constantFrom(...corsHeaders["Access-Control-Allow-Methods"].split(",").map((m) => m.trim())),
      headers: FastCheck.shuffledSubarray(supabaseHeaders).chain((names) => FastCheck.tuple(...names.map(randomCase)))
    },
    ({ headers, method, origin }) => {
      const decision = decideCors(gotrueCorsPolicy(), {
        method: "OPTIONS",
        headers: {
          origin,
          "access-control-request-method": method,
          ...(headers.length > 0 ? { "access-control-request-headers": headers.join(",") } : {})
        }
      })
      expect(decision.headers["access-control-allow-origin"]).toBe(origin)
      expect(decision.headers["access-control-allow-credentials"]).toBe("true")
    }
  )

  it("treats only OPTIONS with Access-Control-Request-Method as a preflight", () => {
    expect(isPreflight({ method: "OPTIONS", headers: { "access-control-request-method": "GET" } })).toBe(true)
    expect(isPreflight({ method: "options", headers: { "access-control-request-method": "GET" } })).toBe(true)
    expect(isPreflight({ method: "OPTIONS", headers: {} })).toBe(false)
    expect(isPreflight({ method: "POST", headers: { "access-control-request-method": "GET" } })).toBe(false)
  })
})

// ---------------------------------------------------------------------------------------------------------------
// CORS_ALLOWED_ORIGINS

const LISTED = ["https://app.example.com", "https://*.preview.example.com", "http://localhost:3000", "http://b.example.com:*"]
const listed = gotrueCorsPolicy([], LISTED)

/**
 * The list above, written again as a reference model over what the URL parser makes of an origin (which drops a
 * default port): an independent reading of the rule, not a copy of it.
 */
const allowedByModel = (origin: string): boolean => {
  const url = new URL(origin)
  const scheme = url.protocol.slice(0, -1)
  const host = url.hostname
  if (scheme === "https" && host === "app.example.com" && url.port === "") return true
  if (scheme === "https" && url.port === "" && host.endsWith(".preview.example.com")) {
    const head = host.slice(0, -".preview.example.com".length)
    return head !== "" && !head.includes(".")
  }
  if (scheme === "http" && host === "localhost" && url.port === "3000") return true
  return scheme === "http" && host === "b.example.com"
}

// Few labels, so that generated origins hit the listed ones, their subdomains and their near misses often.
const hostLabel = FastCheck.constantFrom("app", "a", "b", "example", "com", "preview", "evil", "localhost", "net")
const browserOrigin = FastCheck.record({
  scheme: FastCheck.constantFrom("http", "https"),
  labels: FastCheck.array(hostLabel, { minLength: 1, maxLength: 4 }),
  port: FastCheck.constantFrom("", ":3000", ":443", ":80", ":8080")
}).map(({ labels, port, scheme }) => new URL(`${scheme}://${labels.join(".")}${port}`).origin)
const nearListed = FastCheck.tuple(FastCheck.constantFrom(...LISTED), FastCheck.constantFrom("", "x", ".evil.net", ":1", "/")).map(
  ([entry, suffix]) => `${entry.replace(":*", ":9000").replace("*", "pr-7")}${suffix}`
)
const anyOrigin = FastCheck.oneof(browserOrigin, nearListed, FastCheck.constantFrom("null", "", "https://", "capacitor://localhost"))

describe("decideCors with CORS_ALLOWED_ORIGINS", () => {
  it.prop("an actual request gets Access-Control-Allow-Origin and credentials exactly when its origin is listed", {
    origin: browserOrigin,
    method
  }, ({ method, origin }) => {
    const decision = decideCors(listed, { method, headers: { origin } })
    expect(decision._tag).toBe("Actual")
    if (allowedByModel(origin)) {
      expect(decision.headers["access-control-allow-origin"]).toBe(origin)
      expect(decision.headers["access-control-allow-credentials"]).toBe("true")
    } else {
      expect(decision.headers).toStrictEqual({ vary: "Origin" })
    }
  })

  it.prop("a preflight from an origin not listed gets no Access-Control-* header, whatever it asks for", {
    request: preflight,
    origin: anyOrigin
  }, ({ origin, request }) => {
    const decision = decideCors(listed, { ...request, headers: { ...request.headers, origin } })
    const granted = decision.headers["access-control-allow-origin"] !== undefined
    if (granted) expect(decision.headers["access-control-allow-origin"]).toBe(origin)
    if (!isAllowedOrigin(origin, listed.allowedOrigins)) {
      expect(Object.keys(decision.headers)).toEqual(["vary"])
    } else {
      // A listed origin is judged as before: the same answer as with no list.
      expect(decision).toStrictEqual(decideCors(gotrueCorsPolicy(), { ...request, headers: { ...request.headers, origin } }))
    }
  })

  it.prop("the rule and the model agree on every origin a browser sends", { origin: browserOrigin }, ({ origin }) => {
    expect(isAllowedOrigin(origin, listed.allowedOrigins)).toBe(allowedByModel(origin))
    // Every such origin is also a valid entry, which then allows exactly itself among the generated ones.
    expect(corsOriginProblem(origin)).toBeUndefined()
  })

  it.prop("an exact entry allows exactly its own origin", { entry: browserOrigin, origin: browserOrigin }, ({ entry, origin }) => {
    expect(isAllowedOrigin(origin, compileCorsOrigins([entry]))).toBe(origin === entry)
  })

  it.prop("no list echoes every origin, as GoTrue does", { origin: anyOrigin.filter((o) => o !== "") }, ({ origin }) => {
    expect(decideCors(gotrueCorsPolicy(), { method: "GET", headers: { origin } }).headers["access-control-allow-origin"]).toBe(origin)
  })

  it("a `*` label stands for one label, never none, two, or a suffix; the scheme and port still count", () => {
    const wildcard = compileCorsOrigins(["https://*.example.com"])
    expect(isAllowedOrigin("https://app.example.com", wildcard)).toBe(true)
    expect(isAllowedOrigin("https://pr-12.example.com", wildcard)).toBe(true)
    for (const refused of [
      "https://example.com", "https://a.b.example.com", "https://app.example.com.evil.net", "https://appexample.com",
      "https://evil.net", "http://app.example.com", "https://app.example.com:8443", "https://app.example.com/",
      "https://user@app.example.com", "null", "*"
    ]) {
      expect(isAllowedOrigin(refused, wildcard), refused).toBe(false)
    }
  })

  it("default ports, case, internationalised names and non-web schemes are compared as a browser sends them", () => {
    const origins = compileCorsOrigins(["https://App.Example.com:443", "http://bücher.example", "capacitor://localhost", "http://[::1]:3000"])
    expect(isAllowedOrigin("https://app.example.com", origins)).toBe(true)
    expect(isAllowedOrigin("http://xn--bcher-kva.example", origins)).toBe(true)
    expect(isAllowedOrigin("capacitor://localhost", origins)).toBe(true)
    expect(isAllowedOrigin("http://[::1]:3000", origins)).toBe(true)
    expect(isAllowedOrigin("http://[::1]:3001", origins)).toBe(false)
    expect(isAllowedOrigin("ionic://localhost", origins)).toBe(false)
  })

  it("entries that are not origins are refused with a reason", () => {
    for (const entry of ["https://app.example.com/path", "app.example.com", "https://*", "https://a.*x.com", "https://user@a.com",
      "https://a.com?x=1", "https://a.com:99999", "null", "*", "https://a.com#f", "https://*.com", "https://*.*.com"]) {
      expect(corsOriginProblem(entry), entry).toBeDefined()
    }
    for (const entry of ["https://app.example.com", "https://app.example.com/", "https://*.example.com", "http://localhost:*"]) {
      expect(corsOriginProblem(entry), entry).toBeUndefined()
    }
  })
})
