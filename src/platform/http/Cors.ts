import { domainToASCII } from "node:url"

/**
 * GoTrue's CORS policy (rs/cors with every origin allowed and credentials on): the request's Origin is echoed,
 * never "*", because browsers refuse "*" on credentialed requests. Preflights answer 204 and name only what
 * was asked for, and only when all of it is allowed.
 *
 * Gatehouse's own CORS_ALLOWED_ORIGINS narrows "every origin" to a list: echoing any Origin with credentials lets
 * every site on the web send the browser's cookies for this host with its requests and read the answers, and a
 * deployment cannot know what a proxy in front, or a later feature, puts in those cookies. Unset, every origin is
 * allowed, as in GoTrue.
 */
export interface CorsPolicy {
  readonly allowedMethods: ReadonlyArray<string>
  readonly allowedHeaders: ReadonlyArray<string>
  readonly exposedHeaders: ReadonlyArray<string>
  /** "any": GoTrue's behaviour, every Origin echoed. */
  readonly allowedOrigins: CorsOrigins | "any"
}

/** GoTrue's own list (api.go). */
const GOTRUE_ALLOWED_HEADERS = ["Accept", "Authorization", "Content-Type", "X-Client-IP", "X-Client-Info", "X-JWT-AUD", "x-use-cookie", "X-Supabase-Api-Version"]

/**
 * What supabase-js sends besides (its `@supabase/supabase-js/cors` list): `apikey` on every call, and postgrest-js's
 * `x-retry-count`. GoTrue leaves them out because Supabase's gateway answers CORS in front of it; a browser app
 * that calls Gatehouse directly would otherwise have its first preflight refused, as a whole.
 */
const SUPABASE_JS_HEADERS = ["apikey", "x-retry-count"]

export const gotrueCorsPolicy = (
  extraAllowedHeaders: ReadonlyArray<string> = [],
  allowedOrigins: ReadonlyArray<string> = []
): CorsPolicy => ({
  allowedMethods: ["GET", "POST", "PUT", "PATCH", "DELETE"],
  allowedHeaders: [...GOTRUE_ALLOWED_HEADERS, ...SUPABASE_JS_HEADERS, ...extraAllowedHeaders],
  // GoTrue's three (auth-js takes an error's `code` from the body only when it can read X-Supabase-Api-Version;
  // the admin list pages with X-Total-Count and Link), and the error code header for an app's own fetch calls.
  exposedHeaders: ["X-Total-Count", "Link", "X-Supabase-Api-Version", "X-Sb-Error-Code"],
  allowedOrigins: allowedOrigins.length === 0 ? "any" : compileCorsOrigins(allowedOrigins)
})

/**
 * CORS_ALLOWED_ORIGINS, compiled once. Each entry is an origin, `scheme://host[:port]`, compared part by part with
 * the request's Origin, as URI_ALLOW_LIST entries are with a redirect URL: the scheme and port exactly (a default
 * port written out or left off alike), the host label by label, where a label `*` stands for any one label
 * (`https://*.example.com` allows `https://app.example.com`, never `https://example.com`,
 * `https://a.b.example.com` or `https://example.com.evil.net`; a host with a `*` needs two other labels), and a
 * port `*` for any port (`http://localhost:*`).
 * Comparing whole labels needs no glob engine, and no pattern can reach from the host into the port or beyond.
 */
export interface CorsOrigins {
  readonly entries: ReadonlyArray<OriginPattern>
}

interface OriginPattern {
  readonly scheme: string
  /** The host's labels; "*" matches any one label. An IPv6 host is one label, brackets included. */
  readonly labels: ReadonlyArray<string>
  /** Empty for the scheme's default; undefined for any port. */
  readonly port: string | undefined
}

// An origin as a browser serialises it, and as an entry is written (which may add `*` labels, a `*` port and a
// trailing slash). Non-special schemes (capacitor://localhost, chrome-extension://<id>) are origins too.
const ORIGIN = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(\[[0-9A-Fa-f:.]+\]|[^/:?#@[\]\s\\]+)(?::(\d{1,5}|\*))?$/
const LABEL = /^[a-z0-9_-]+$/
const DEFAULT_PORTS: Readonly<Record<string, string>> = { http: "80", https: "443", ws: "80", wss: "443" }

type ParsedOrigin = { readonly origin: OriginPattern } | { readonly problem: string }

const parseOrigin = (raw: string, wildcards: boolean): ParsedOrigin => {
  const shape = ORIGIN.exec(wildcards ? raw.replace(/\/$/, "") : raw)
  if (shape === null) return { problem: "must be an origin, scheme://host[:port], with no path" }
  const scheme = shape[1]!.toLowerCase()
  const hostText = shape[2]!.toLowerCase()
  const portText = shape[3] ?? ""
  const labels = hostText.startsWith("[")
    ? [hostText]
    // An operator may write an internationalised name; browsers send it in punycode.
    : hostText.split(".").map((label) => (/^[\x21-\x7e]*$/.test(label) ? label : domainToASCII(label) || label))
  if (!hostText.startsWith("[") && !labels.every((label) => LABEL.test(label) || (wildcards && label === "*"))) {
    return { problem: `has an invalid host: ${hostText}` }
  }
  // `https://*` or `https://*.com` would hand credentials to anyone who can buy a name.
  if (labels.includes("*") && labels.filter((label) => label !== "*").length < 2) {
    return { problem: "needs at least two literal host labels beside a *" }
  }
  if ((portText === "*" && !wildcards) || Number(portText) > 65535) return { problem: `has an invalid port: ${portText}` }
  const port = portText === "*" ? undefined : portText === DEFAULT_PORTS[scheme] ? "" : portText
  return { origin: { scheme, labels, port } }
}

/** Why a CORS_ALLOWED_ORIGINS entry cannot be used, for the configuration check at start-up; undefined when fine. */
export const corsOriginProblem = (entry: string): string | undefined => {
  const parsed = parseOrigin(entry.trim(), true)
  return "problem" in parsed ? parsed.problem : undefined
}

/** Entries that do not parse are left out; configuration loading has already refused them with a reason. */
export const compileCorsOrigins = (entries: ReadonlyArray<string>): CorsOrigins => ({
  entries: entries.flatMap((raw) => {
    const parsed = parseOrigin(raw.trim(), true)
    return "origin" in parsed ? [parsed.origin] : []
  })
})

/** Whether a request's Origin header names an allowed origin; "null" and anything not an origin never is. */
export const isAllowedOrigin = (origin: string, allowed: CorsOrigins | "any"): boolean => {
  if (allowed === "any") return true
  const parsed = parseOrigin(origin, false)
  if (!("origin" in parsed)) return false
  const { labels, port, scheme } = parsed.origin
  return allowed.entries.some((entry) =>
    entry.scheme === scheme &&
    (entry.port === undefined || entry.port === port) &&
    entry.labels.length === labels.length &&
    entry.labels.every((label, i) => label === "*" || label === labels[i])
  )
}

export interface CorsRequest {
  readonly method: string
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string | undefined>>
}

export type CorsDecision =
  | { readonly _tag: "Preflight"; readonly headers: Readonly<Record<string, string>> }
  | { readonly _tag: "Actual"; readonly headers: Readonly<Record<string, string>> }

export const isPreflight = (request: CorsRequest): boolean =>
  request.method.toUpperCase() === "OPTIONS" && request.headers["access-control-request-method"] !== undefined

export const decideCors = (policy: CorsPolicy, request: CorsRequest): CorsDecision => {
  const presented = request.headers["origin"]
  // An origin outside the list is answered as if it had sent none: no Access-Control-* header at all.
  const origin = presented !== undefined && isAllowedOrigin(presented, policy.allowedOrigins) ? presented : undefined
  if (isPreflight(request)) {
    const vary = { vary: "Origin, Access-Control-Request-Method, Access-Control-Request-Headers" }
    if (origin === undefined) return { _tag: "Preflight", headers: vary }
    const method = request.headers["access-control-request-method"]!.toUpperCase()
    const methodAllowed = method === "OPTIONS" || policy.allowedMethods.includes(method)
    const requested = (request.headers["access-control-request-headers"] ?? "")
      .split(",").map((h) => h.trim()).filter((h) => h !== "")
    const allowed = new Set([...policy.allowedHeaders, "Origin"].map((h) => h.toLowerCase()))
    if (!methodAllowed || !requested.every((h) => allowed.has(h.toLowerCase()))) {
      return { _tag: "Preflight", headers: vary }
    }
    return {
      _tag: "Preflight",
      headers: {
        ...vary,
        "access-control-allow-origin": origin,
        "access-control-allow-methods": method,
        ...(requested.length > 0 ? { "access-control-allow-headers": requested.join(", ") } : {}),
        "access-control-allow-credentials": "true"
      }
    }
  }
  if (origin === undefined) return { _tag: "Actual", headers: { vary: "Origin" } }
  return {
    _tag: "Actual",
    headers: {
      vary: "Origin",
      "access-control-allow-origin": origin,
      "access-control-allow-credentials": "true",
      "access-control-expose-headers": policy.exposedHeaders.join(", ")
    }
  }
}
