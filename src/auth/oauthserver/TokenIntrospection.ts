import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { TokenSigner } from "../../platform/TokenSigner.js"
import { AuthError } from "../domain/AuthError.js"
import type { OAuthTokenRequest } from "../domain/OAuthTokenRequest.js"
import {
  accessTokenSession,
  activeAnswer,
  INACTIVE,
  type IntrospectionAnswer,
  readIntrospectionBody
} from "../domain/TokenIntrospection.js"
import { isBanned } from "../domain/UserRow.js"
import { adminTokenCheck } from "../http/AdminAuthenticatedLive.js"
import { bearerToken } from "../../platform/http/Bearer.js"
import { SessionsRepo } from "../sessions/SessionsRepo.js"
import { OAuthServer } from "./OAuthServer.js"
import { traced } from "../../platform/Traced.js"

/** RFC 7662 §2.3 / RFC 6749 §5.2: a caller that did not authenticate. Why is not said: it would help a guesser. */
const unauthenticated = () =>
  new AuthError({ status: 401, code: "invalid_client", message: "Client authentication failed", oauth: true })

/**
 * Token introspection (RFC 7662) for resource servers: is this access token still good, and whose is it. A token is
 * active while its signature and expiry hold and its session lives (the bearer check's rule: a logout, refresh-token
 * reuse, a ban or a deleted user ends it at once, where a JWT alone stays valid until it expires).
 *
 * Callers: the service role (a JWT whose role is in JWT_ADMIN_ROLES, as the admin API checks it), whether or not the
 * OAuth server is on; and, while OAUTH_SERVER_ENABLED, a confidential OAuth client with its credentials, checked as
 * the token endpoint checks them. A public client has no secret to prove who it is, so it may not ask.
 */
export class TokenIntrospection extends Effect.Service<TokenIntrospection>()("auth/TokenIntrospection", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const server = yield* OAuthServer
    const signer = yield* TokenSigner
    const sessions = yield* SessionsRepo
    const adminToken = yield* adminTokenCheck(new Set(config.jwt.adminRoles))

    const authenticate = (request: OAuthTokenRequest): Effect.Effect<void, AuthError> =>
      Effect.gen(function*() {
        if (request.authorization !== undefined && /^bearer\s/i.test(request.authorization)) {
          const token = bearerToken(request.authorization)
          if (token === undefined) return yield* unauthenticated()
          return yield* Effect.mapError(adminToken(token), unauthenticated)
        }
        if (!config.oauthServer.enabled) return yield* unauthenticated()
        const client = yield* Effect.mapError(server.authenticateClient(request), unauthenticated)
        if (client === undefined || client.client_type !== "confidential") return yield* unauthenticated()
      })

    /** What a token is: never an error, whatever the text (a junk token is simply not active). */
    const answer = (token: string): Effect.Effect<IntrospectionAnswer> =>
      Effect.gen(function*() {
        const verified = yield* Effect.either(signer.verify(token))
        if (Either.isLeft(verified)) return INACTIVE
        const claims = verified.right.payload
        const session = accessTokenSession(claims)
        if (session === undefined) return INACTIVE
        const found = yield* sessions.findForSession(session.userId, session.sessionId)
        if (Option.isNone(found) || !found.value.sessionExists) return INACTIVE
        if (isBanned(found.value.user, new Date(yield* Clock.currentTimeMillis))) return INACTIVE
        return activeAnswer(claims, session, found.value.user.email)
      })

    /** POST /oauth/introspect: the caller first, then the token. */
    const introspect = traced("TokenIntrospection.introspect")(function*(request: OAuthTokenRequest): Effect.fn.Return<IntrospectionAnswer, AuthError> {
      yield* authenticate(request)
      const fields = readIntrospectionBody(request.contentType, request.body)
      if (fields === undefined) return yield* AuthError.oauth("invalid_request", "The request body cannot be read")
      if (fields.token === "") return yield* AuthError.oauth("invalid_request", "token is required")
      return yield* answer(fields.token)
    })

    return { introspect } as const
  })
}) {}
