import { compileCorsOrigins, type CorsOrigins, isAllowedOrigin } from "../../domain/CorsOrigins.js"

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
