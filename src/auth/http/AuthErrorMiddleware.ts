import * as Headers from "@effect/platform/Headers"
import * as HttpApiError from "@effect/platform/HttpApiError"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import { bodyErrorOf } from "../../platform/http/RequestBody.js"
import { allowHeader } from "../../platform/http/RouteMethods.js"
import { RequestId } from "../../platform/http/RequestId.js"
import { isUnavailable, sqlState } from "../../platform/sql/SqlErrors.js"
import { AuthError } from "../domain/AuthError.js"
import { API_VERSION_HEADER, renderError } from "./ErrorEnvelope.js"
import { AUTH_PREFIX } from "./AuthPrefix.js"

/** An AuthError as the response GoTrue would send to this request. */
export const authErrorResponse = (
  request: HttpServerRequest.HttpServerRequest,
  requestId: string,
  error: Pick<AuthError, "status" | "code" | "message" | "reasons" | "retryAfter" | "oauth">
): HttpServerResponse.HttpServerResponse => {
  const rendered = renderError(error, { apiVersionHeader: request.headers[API_VERSION_HEADER], requestId })
  return HttpServerResponse.unsafeJson(rendered.body, { status: rendered.status, headers: rendered.headers })
}

const describeIssue = (issue: HttpApiError.HttpApiDecodeError["issues"][number]): string => {
  const field = issue.path.length > 0 ? `"${issue.path.map(String).join(".")}"` : "the request"
  switch (issue._tag) {
    case "Missing":
      return `${field} is required`
    case "Unexpected":
      return `${field} is not allowed`
    default:
      return `${field} has an invalid value`
  }
}

/**
 * Turns whatever a request failed with into GoTrue's envelope. Schema failures name the field and the rule but
 * never echo the value (it may be a password); JSON syntax errors are not echoed either, because V8 quotes the
 * offending input in them.
 */
export const toAuthError = (cause: Cause.Cause<unknown>): AuthError => {
  const failure = Cause.squash(cause)
  if (failure instanceof AuthError) return failure
  // Repos turn SQL failures into defects; one that means the database is away is an outage, not a bug.
  if (isUnavailable(failure)) return AuthError.databaseUnavailable()
  if (failure instanceof HttpApiError.HttpApiDecodeError) {
    const described = [...new Set(failure.issues.map(describeIssue))].join("; ")
    return AuthError.validation(described !== "" ? `Invalid request: ${described}` : "Invalid request")
  }
  if (HttpServerError.isServerError(failure)) {
    if (failure._tag === "RouteNotFound") return AuthError.of(404, "not_found", "Not found")
    if (failure._tag === "RequestError" && failure.reason === "Decode") {
      return bodyErrorOf(failure) === "TooLarge"
        ? AuthError.of(413, "request_entity_too_large", "Request entity too large")
        : AuthError.of(400, "bad_json", "Could not parse request body as JSON")
    }
  }
  return AuthError.unexpected()
}

/**
 * GoTrue parses every body as JSON whatever its Content-Type: `curl -d '{...}'` (sent as a form) works there, and
 * a multipart, XML or binary body fails the JSON parse with 400 bad_json. The auth API does the same by reading
 * every body as application/json, so HttpApi never reaches its multipart, form or byte decoders (a multipart
 * body without a boundary was a 500 there). The body itself is read by the edge's bounded reader.
 */
const bodyAsJson = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    request.method === "GET" || request.method === "HEAD" || /^application\/json\s*(;|$)/i.test(request.headers["content-type"] ?? "") ||
      keepsItsContentType(request)
      ? app
      : Effect.provideService(app, HttpServerRequest.HttpServerRequest, request.modify({
        headers: Headers.set(request.headers, "content-type", "application/json")
      })))

/**
 * Whether a request's body is read by its own Content-Type rather than as JSON: the auth routes whose body is a form,
 * as in GoTrue (a provider's form_post answer, Apple's, and SAML's ACS) and as the link confirmation page posts; and the
 * OAuth server's token endpoint, which reads its body by its Content-Type itself (forms, as RFC 6749 says, or JSON), as
 * token introspection does (RFC 7662).
 */
const FORM_ROUTES = ["/callback", "/sso/saml/acs", "/verify/confirm"]
const OWN_BODY_ROUTES = ["/oauth/token", "/oauth/introspect"]

const keepsItsContentType = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const path = request.url.split("?")[0] ?? ""
  if (OWN_BODY_ROUTES.some((route) => path === route || path === `${AUTH_PREFIX}${route}`)) return true
  return FORM_ROUTES.some((route) => path === route || path === `${AUTH_PREFIX}${route}`) &&
    /^application\/x-www-form-urlencoded\s*(;|$)/i.test(request.headers["content-type"] ?? "")
}

/** The methods the auth API has routes for at a request's path (none: the path is not one of its routes). */
export type RouteMethodsAt = Effect.Effect<(request: HttpServerRequest.HttpServerRequest) => ReadonlyArray<string>>

/**
 * The auth API's request and error boundary: bodies are read as JSON, and every failure or defect becomes an
 * enveloped response; the causes of 5xx but 503 are logged. A request no route took is a 405 with `Allow` when the
 * path has routes for other methods (as GoTrue's router answers, there with an empty body), else GoTrue's 404.
 */
export const authErrorMiddleware = (methodsAt: RouteMethodsAt) => <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<never, R> =>
  Effect.catchAllCause(bodyAsJson(app), (cause) =>
    Cause.isInterruptedOnly(cause)
      ? Effect.failCause(cause as Cause.Cause<never>)
      : Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const requestId = yield* RequestId
        const failure = Cause.squash(cause)
        if (HttpServerError.isServerError(failure) && failure._tag === "RouteNotFound") {
          const methods = (yield* methodsAt)(request)
          if (methods.length > 0) {
            return HttpServerResponse.setHeader(
              authErrorResponse(request, requestId, AuthError.of(405, "method_not_allowed", "Method not allowed")),
              "allow",
              allowHeader(methods)
            )
          }
        }
        const error = toAuthError(cause)
        // A 503 is expected (a dependency is down: the database, the captcha provider): one warning, not a bug's error.
        if (isUnavailable(failure)) yield* Effect.logWarning("database unavailable").pipe(Effect.annotateLogs("sqlstate", sqlState(failure) ?? "none"))
        if (error.status >= 500 && error.status !== 503) yield* Effect.logError("unexpected failure", cause)
        return authErrorResponse(request, requestId, error)
      })) as HttpApp.Default<never, R>

