/**
 * GoTrue's CORS policy (rs/cors with every origin allowed and credentials on): the request's Origin is echoed,
 * never "*", because browsers refuse "*" on credentialed requests. Preflights answer 204 and name only what
 * was asked for, and only when all of it is allowed.
 */
export interface CorsPolicy {
  readonly allowedMethods: ReadonlyArray<string>
  readonly allowedHeaders: ReadonlyArray<string>
  readonly exposedHeaders: ReadonlyArray<string>
}

export const gotrueCorsPolicy = (extraAllowedHeaders: ReadonlyArray<string> = []): CorsPolicy => ({
  allowedMethods: ["GET", "POST", "PUT", "PATCH", "DELETE"],
  allowedHeaders: [
    "Accept",
    "Authorization",
    "Content-Type",
    "X-Client-IP",
    "X-Client-Info",
    "X-JWT-AUD",
    "x-use-cookie",
    "X-Supabase-Api-Version",
    ...extraAllowedHeaders
  ],
  exposedHeaders: ["X-Total-Count", "Link", "X-Supabase-Api-Version"]
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
  const origin = request.headers["origin"]
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
