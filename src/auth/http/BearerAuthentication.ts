import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { TokenSigner } from "../../platform/TokenSigner.js"
import { bearerToken } from "../../platform/http/Bearer.js"
import type { CurrentUser } from "../contract/CurrentUser.js"
import { AuthError } from "../domain/AuthError.js"
import { isIdTokenClaims } from "../domain/OAuthClaims.js"
import { isBanned } from "../domain/UserRow.js"
import { SessionsRepo } from "../sessions/SessionsRepo.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const NIL_UUID = "00000000-0000-0000-0000-000000000000"

// Built when a request fails, not before: most requests do not.
const sessionNotFound = () => AuthError.of(403, "session_not_found", "Session from session_id claim in JWT does not exist")

const badJwt = (detail: string) => AuthError.of(403, "bad_jwt", `invalid JWT: unable to parse or verify signature, ${detail}`)

/**
 * GoTrue's requireAuthentication (reference §1, "User auth") on a raw Authorization header. The token must verify,
 * its user must exist and not be banned, and its session must still exist: access tokens stop working here the
 * moment a session is logged out, even though other services accept them until they expire. One check for the
 * Authenticated middleware and GET /user's hot route, so the two cannot disagree.
 */
export const bearerAuthentication = Effect.gen(function*() {
  const signer = yield* TokenSigner
  const sessions = yield* SessionsRepo
  return (authorization: string | undefined): Effect.Effect<CurrentUser["Type"], AuthError> =>
    Effect.gen(function*() {
      // GoTrue's rule is the strict bearerToken (platform/http/Bearer.ts) on the raw header: the platform's bearer
      // decoding strips any 7 characters ("token abc" would pass as "bc").
      const token = bearerToken(authorization)
      if (token === undefined) return yield* AuthError.of(401, "no_authorization", "This endpoint requires a valid Bearer token")
      const verified = yield* signer.verify(token).pipe(
        Effect.mapError((invalid) => badJwt(invalid.reason === "expired" ? "token has invalid claims: token is expired" : "token is invalid"))
      )
      const { payload } = verified
      // Signed with the same key, an ID token proves who the user is to its client, and nothing to this server.
      if (isIdTokenClaims(payload)) return yield* badJwt("token is invalid")
      const sub = payload["sub"]
      // GoTrue's exact text: apps calling getUser with the anon key match on it to mean "not signed in".
      if (typeof sub !== "string" || sub === "") return yield* AuthError.of(403, "bad_jwt", "invalid claim: missing sub claim")
      if (!UUID.test(sub)) return yield* AuthError.of(400, "bad_jwt", "invalid claim: sub claim must be a UUID")
      const claim = payload["session_id"]
      const sessionId = typeof claim === "string" && claim !== "" && claim !== NIL_UUID ? claim : undefined
      if (sessionId !== undefined && !UUID.test(sessionId)) return yield* sessionNotFound()
      const found = yield* sessions.findForSession(sub, sessionId)
      if (Option.isNone(found)) return yield* AuthError.of(403, "user_not_found", "User from sub claim in JWT does not exist")
      const { factors, identities, session, sessionExists, user } = found.value
      const now = new Date(yield* Clock.currentTimeMillis)
      if (isBanned(user, now)) return yield* AuthError.of(403, "user_banned", "User is banned")
      if (!sessionExists) return yield* sessionNotFound()
      return { user, identities, factors, sessionId, session, claims: payload }
    })
})
