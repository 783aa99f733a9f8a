import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { bearerToken } from "../../platform/http/Bearer.js"
import { TokenSigner } from "../../platform/TokenSigner.js"
import { AdminAuthenticated, InviterAuthenticated } from "../contract/AdminAuthenticated.js"
import { AuthError } from "../domain/AuthError.js"
import { SessionsRepo } from "../sessions/SessionsRepo.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const NIL_UUID = "00000000-0000-0000-0000-000000000000"

/**
 * GoTrue's requireAdminCredentials (reference §1, "Admin auth details"): the token must verify and its `role` must
 * be one of `roles`. `sub` is not checked (auth-js's own tests sign `sub: "1234567890"`), but a token that names
 * a real session is only good while that session lasts, so a logged-out admin user's token stops working here.
 * The captcha check (CaptchaProtectedLive) asks the same question: admin credentials skip it.
 */
export const adminCheck = (roles: ReadonlySet<string>) =>
  Effect.map(adminTokenCheck(roles), (check) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => check(request.headers["authorization"])))

/** The same check on an Authorization header's value, for a route that authenticates its caller itself (introspection). */
export const adminTokenCheck = (roles: ReadonlySet<string>) =>
  Effect.gen(function*() {
    const signer = yield* TokenSigner
    const sessions = yield* SessionsRepo
    return (authorization: string | undefined) => Effect.gen(function*() {
      const token = bearerToken(authorization)
      if (token === undefined) return yield* AuthError.of(401, "no_authorization", "This endpoint requires a valid Bearer token")
      const { payload } = yield* signer.verify(token).pipe(
        Effect.mapError((invalid) =>
          AuthError.of(403, "bad_jwt", `invalid JWT: unable to parse or verify signature, ${invalid.reason === "expired" ? "token has invalid claims: token is expired" : "token is invalid"}`)
        )
      )
      const role = payload["role"]
      if (typeof role !== "string" || !roles.has(role)) return yield* AuthError.of(403, "not_admin", "User not allowed")
      const sub = payload["sub"]
      const sessionId = payload["session_id"]
      if (typeof sub === "string" && UUID.test(sub) && typeof sessionId === "string" && UUID.test(sessionId) && sessionId !== NIL_UUID) {
        const found = yield* sessions.findForSession(sub, sessionId)
        if (Option.isNone(found) || !found.value.sessionExists) {
          return yield* AuthError.of(403, "session_expired", "Session from session_id claim in JWT does not exist")
        }
      }
      return { claims: payload }
    })
  })

export const AdminAuthenticatedLive = Layer.effect(
  AdminAuthenticated,
  Effect.gen(function*() {
    const config = yield* AuthConfig
    const check = yield* adminCheck(new Set(config.jwt.adminRoles))
    return { serviceRole: () => check }
  })
)

export const InviterAuthenticatedLive = Layer.effect(
  InviterAuthenticated,
  Effect.gen(function*() {
    const config = yield* AuthConfig
    const check = yield* adminCheck(new Set([...config.jwt.adminRoles, "service_role"]))
    return { serviceRole: () => check }
  })
)
