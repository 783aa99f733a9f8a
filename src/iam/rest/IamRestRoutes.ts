import { type DescMessage, fromJson, type JsonObject, type JsonValue, toJson } from "@bufbuild/protobuf"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { IamConfig } from "../../config/IamConfig.js"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { clientHeaderName, requestClient } from "../../platform/http/RateLimitKey.js"
import { bodyErrorOf, parseJsonBody, RequestBodyError } from "../../platform/http/RequestBody.js"
import { GUARDS, needsCredentials, type Operation } from "../domain/Guards.js"
import { IamError } from "../domain/IamError.js"
import { httpStatusOf } from "../domain/IamStatus.js"
import { tooLargeMessage } from "../domain/Refusals.js"
import { methodOf } from "../IamContract.js"
import { anyHandler, IamHandlers } from "../IamHandlers.js"
import { jsonInputProblem } from "../JsonInputProblem.js"
import { IamRouter } from "../IamRouter.js"
import { IamKeys } from "../tokens/IamKeys.js"
import { IamSessions } from "../tokens/IamSessions.js"

export interface RestRoute {
  readonly method: "GET" | "POST" | "DELETE"
  readonly path: `/auth/${string}`
  readonly operation: Operation
}

/** The REST mirror of the contract: the JSON body is the request message, path parameters fill its ids. */
export const REST_ROUTES: ReadonlyArray<RestRoute> = [
  { method: "POST", path: "/auth/register", operation: "Register" },
  { method: "POST", path: "/auth/login", operation: "Login" },
  { method: "POST", path: "/auth/logout", operation: "Logout" },
  { method: "POST", path: "/auth/token", operation: "GenerateToken" },
  { method: "POST", path: "/auth/refresh", operation: "RefreshToken" },
  { method: "POST", path: "/auth/validate", operation: "ValidateToken" },
  { method: "GET", path: "/auth/validate", operation: "ValidateToken" },
  { method: "POST", path: "/auth/roles", operation: "CreateRole" },
  { method: "GET", path: "/auth/roles", operation: "ListRoles" },
  { method: "DELETE", path: "/auth/roles/:role_id", operation: "DeleteRole" },
  { method: "POST", path: "/auth/users/:user_id/roles", operation: "AssignRole" },
  { method: "DELETE", path: "/auth/users/:user_id/roles/:role_id", operation: "UnassignRole" },
  { method: "GET", path: "/auth/users/:user_id/roles", operation: "ListUserRoles" },
  { method: "POST", path: "/auth/permissions", operation: "CreatePermission" },
  { method: "GET", path: "/auth/permissions", operation: "ListPermissions" },
  { method: "POST", path: "/auth/permissions/check", operation: "CheckPermission" },
  { method: "DELETE", path: "/auth/permissions/:permission_id", operation: "DeletePermission" },
  { method: "POST", path: "/auth/roles/:role_id/permissions", operation: "GrantPermission" },
  { method: "DELETE", path: "/auth/roles/:role_id/permissions/:permission_id", operation: "RevokePermission" },
  { method: "GET", path: "/auth/roles/:role_id/permissions", operation: "ListRolePermissions" },
  { method: "POST", path: "/auth/login/second-step", operation: "LoginSecondStep" },
  { method: "POST", path: "/auth/totp/enroll", operation: "EnrollTotp" },
  { method: "POST", path: "/auth/totp/verify", operation: "VerifyTotpEnrollment" },
  { method: "POST", path: "/auth/users/:user_id/totp/remove", operation: "RemoveTotp" },
  { method: "POST", path: "/auth/oauth/start", operation: "StartOAuthSignIn" },
  { method: "POST", path: "/auth/oauth/finish", operation: "FinishOAuthSignIn" }
]

/**
 * `{"code":"not_found","message":"…"}`, Connect's error body, with the matching HTTP status, and a refusal's
 * retry hint as Retry-After (whole seconds).
 */
export const errorResponse = (error: IamError): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson({ code: error.code, message: error.message }, {
    status: httpStatusOf(error.code),
    ...(error.retryAfter === undefined ? {} : { headers: { "retry-after": String(error.retryAfter) } })
  })

/**
 * A path of IAM's with no route for the request's method: 405 with the path's methods in Allow, and in the body
 * `unimplemented` "method not allowed", grpc-gateway's code and words for it (it answers them with 501; the HTTP
 * status here says what happened, as for any other path on the port).
 */
export const methodNotAllowedResponse = (allow: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson({ code: "unimplemented", message: "method not allowed" }, { status: 405, headers: { allow } })

/**
 * A body over the size limit is Connect's resource_exhausted (what connect-go answers for a message over its
 * read limit), but with HTTP 413 rather than the table's 429: nothing is rate limited, and a client that
 * retries a 429 would send the same body again. The limit is AUTH_IAM_MAX_MESSAGE_BYTES, as on the gRPC port (whose
 * Connect answers are 413 too); a body over the main port's own 1 MiB is refused by the edge before it is read.
 */
const tooLargeResponse = (limitBytes: number): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson({ code: "resource_exhausted", message: tooLargeMessage(limitBytes) }, { status: 413 })

/** A body refusal as IAM states it; too large stays a RequestBodyError, the one refusal with its own status. */
const bodyError = (reason: RequestBodyError["reason"] | undefined): IamError | RequestBodyError =>
  reason === "TooLarge" ? new RequestBodyError({ reason })
  : reason === "TooDeep" ? IamError.invalid("request body nests too deeply")
  : reason === "NotJson" ? IamError.invalid("request body is not valid JSON")
  : IamError.invalid("could not read the request body")

const REST_PATTERNS: ReadonlyArray<RegExp> = REST_ROUTES.map((route) => new RegExp(`^${route.path.replace(/:\w+/g, "[^/]+")}$`))

/** Whether a path is one of the REST routes (any method) or /auth/keys. */
export const isRestPath = (path: string): boolean =>
  path === "/auth/keys" || REST_PATTERNS.some((pattern) => pattern.test(path))

/** The edge's refusal (413) of a request to a REST route, in IAM's envelope. */
export const restEdgeRejection = (status: number, limitBytes: number): HttpServerResponse.HttpServerResponse =>
  status === 413 ? tooLargeResponse(limitBytes) : errorResponse(IamError.invalid("bad request"))

/**
 * REST accepts an enum by its short name too ("USER" for RESOURCE_TYPE_USER), the spelling the database and
 * the policy use. Only strings that name no value as written are touched.
 */
export const acceptShortEnumNames = (desc: DescMessage, json: JsonObject): JsonObject => {
  const out: Record<string, JsonValue> = { ...json }
  for (const field of desc.fields) {
    if (field.fieldKind !== "enum") continue
    for (const key of [field.name, field.jsonName]) {
      const value = out[key]
      if (typeof value !== "string" || field.enum.values.some((v) => v.name === value)) continue
      const match = field.enum.values.find((v) => v.name.endsWith(`_${value.toUpperCase()}`) && v.number !== 0)
      if (match !== undefined) out[key] = match.name
    }
  }
  return out
}

/**
 * Path parameters are ids: digits, or, for user_id, "me": the caller, whose id comes from the bearer token (a
 * request without a valid one is refused as every call needing one is).
 */
const pathIds = (
  params: Readonly<Record<string, string | undefined>>,
  caller: Effect.Effect<number, IamError>
): Effect.Effect<JsonObject, IamError> =>
  Effect.forEach(Object.entries(params), ([name, raw]) =>
    raw === "me" && name === "user_id" ? Effect.map(caller, (id) => [name, id] as const)
    : raw !== undefined && /^\d{1,10}$/.test(raw) && Number(raw) <= 2_147_483_647 ? Effect.succeed([name, Number(raw)] as const)
    : Effect.fail(IamError.invalid(`${name} must be a positive integer${name === "user_id" ? " or me" : ""}`))
  ).pipe(Effect.map((entries) => Object.fromEntries(entries)))

const readBody = (
  request: HttpServerRequest.HttpServerRequest,
  limitBytes: number
): Effect.Effect<JsonObject, IamError | RequestBodyError> =>
  request.method === "GET" || request.method === "DELETE"
    ? Effect.succeed({})
    : Number(request.headers["content-length"] ?? "0") > limitBytes
    ? Effect.fail(new RequestBodyError({ reason: "TooLarge" }))
    : request.text.pipe(
      Effect.filterOrFail((text) => Buffer.byteLength(text, "utf8") <= limitBytes, () => new RequestBodyError({ reason: "TooLarge" })),
      // Only an absent body is the default message: whitespace is not JSON.
      Effect.flatMap((text) => text === "" ? Effect.succeed({}) : parseJsonBody(text)),
      Effect.mapError((error) => bodyError(bodyErrorOf(error))),
      Effect.flatMap((parsed) =>
        typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
          ? Effect.succeed(parsed as JsonObject)
          : Effect.fail(IamError.invalid("request body must be a JSON object"))
      )
    )

/**
 * The REST routes and GET /auth/keys, added to the main HTTP port's router. Each route decodes its JSON with
 * the request message's proto3 JSON mapping (snake_case or camelCase names; enums by name or number), calls
 * the shared handler, and answers with the response message in snake_case, defaults included.
 */
export const IamRestRoutesLive: Layer.Layer<never, never, IamHandlers | IamKeys | IamSessions | PlatformConfig | IamConfig> = IamRouter.use((router) =>
  Effect.gen(function*() {
    const handlers = yield* IamHandlers
    const sessions = yield* IamSessions
    const keys = yield* IamKeys
    const { api } = yield* PlatformConfig
    const clientHeader = clientHeaderName(api.clientHeader)
    const limitBytes = (yield* IamConfig).maxMessageBytes
    for (const route of REST_ROUTES) {
      const method = methodOf(route.operation)
      const handler = anyHandler(handlers, route.operation)
      const guarded = needsCredentials(GUARDS[route.operation])
      const app = Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const params = yield* HttpRouter.params
        const authenticate = sessions.authenticate(request.headers["authorization"])
        const body = yield* readBody(request, limitBytes)
        // The path names what a guarded operation acts on, so a caller without valid credentials is UNAUTHENTICATED
        // whatever it names (as for `me`): a malformed id is refused after that check. A malformed body is refused
        // first, as on every other transport, which read the message before the handler runs.
        const ids = yield* pathIds(params, Effect.map(authenticate, (caller) => caller.userId)).pipe(
          Effect.catchAll((error) => guarded ? Effect.zipRight(authenticate, Effect.fail(error)) : Effect.fail(error))
        )
        const input = yield* Effect.try({
          try: () => fromJson(method.input, acceptShortEnumNames(method.input, { ...body, ...ids })),
          catch: (error) => IamError.invalid(jsonInputProblem(method.input, error))
        })
        const client = requestClient(request, clientHeader)
        const output = yield* handler(input as never, { authorization: request.headers["authorization"], client })
        return HttpServerResponse.unsafeJson(toJson(method.output, output as never, { useProtoFieldName: true, alwaysEmitImplicit: true }))
      }).pipe(
        Effect.catchAll((error) => Effect.succeed(error._tag === "RequestBodyError" ? tooLargeResponse(limitBytes) : errorResponse(error))),
        Effect.catchAllDefect((defect) =>
          Effect.zipRight(Effect.logError("iam: unexpected failure", defect), Effect.succeed(errorResponse(IamError.internal()))))
      )
      const add = route.method === "GET" ? router.get : route.method === "POST" ? router.post : router.del
      yield* add(route.path, app)
    }
    yield* router.get("/auth/keys", Effect.succeed(HttpServerResponse.unsafeJson({ keys: keys.published })))
  })
)
