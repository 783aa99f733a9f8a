import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpApp from "@effect/platform/HttpApp"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"

/** Where Supabase's gateway exposes the auth API, and so where supabase-js's `createClient(url)` calls it. */
export const AUTH_PREFIX = "/auth/v1"

/**
 * The IAM service's REST namespace (the spec's `{base_url}/auth/register`, …). No auth route lives under it, so
 * a path that still starts with it after the auth prefix is removed is not an auth route.
 */
export const IAM_NAMESPACE = "/auth/"

export type PrefixRoute =
  /** Not under the auth prefix: routed as it came. */
  | { readonly _tag: "AsIs" }
  /** Under the auth prefix: routed to the auth API at this URL. */
  | { readonly _tag: "Auth"; readonly url: string }
  /** Under the auth prefix but naming a path only the IAM service has: never routed there. */
  | { readonly _tag: "NotFound" }

/** Where a request URL (path and query) goes: the auth API answers at both `/` and `/auth/v1/`. */
export const routeAuthPrefix = (url: string): PrefixRoute => {
  if (!url.startsWith(AUTH_PREFIX)) return { _tag: "AsIs" }
  const rest = url.slice(AUTH_PREFIX.length)
  if (rest !== "" && rest[0] !== "/" && rest[0] !== "?") return { _tag: "AsIs" }
  const inner = rest === "" || rest[0] === "?" ? `/${rest}` : rest
  return inner.startsWith(IAM_NAMESPACE) || inner.startsWith(AUTH_PREFIX) ? { _tag: "NotFound" } : { _tag: "Auth", url: inner }
}

/**
 * Serves the auth API at `/auth/v1/…` as well as at the root, by rewriting the URL before routing. Paths under
 * `/auth/v1/` never reach the IAM routes, so neither product can shadow the other.
 */
export const authPrefix = <R2>(
  notFound: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R2>
) =>
<E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R | R2> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request): HttpApp.Default<E, R | R2> => {
    const route = routeAuthPrefix(request.url)
    switch (route._tag) {
      case "AsIs":
        return app
      case "NotFound":
        return notFound(request)
      case "Auth":
        return Effect.provideService(app, HttpServerRequest.HttpServerRequest, request.modify({ url: route.url }))
    }
  })
