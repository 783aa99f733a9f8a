import { HttpServerRequest } from "@effect/platform"
import { Clock, Effect, Layer, Option } from "effect"
import { TokenSigner } from "../../platform/TokenSigner.js"
import { Authenticated } from "../Api.js"
import { AuthError } from "../domain/AuthError.js"
import { isBanned } from "../domain/UserRow.js"
import { Sessions } from "../sessions/Sessions.js"
import { Users } from "../users/Users.js"

const BEARER = /^bearer (\S+)$/i
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const NIL_UUID = "00000000-0000-0000-0000-000000000000"

const badJwt = (detail: string) => AuthError.of(403, "bad_jwt", `invalid JWT: unable to parse or verify signature, ${detail}`)

/**
 * GoTrue's requireAuthentication (reference §1, "User auth"). The token must verify, its user must exist and
 * not be banned, and its session must still exist: access tokens stop working here the moment a session is
 * logged out, even though other services accept them until they expire.
 */
export const AuthenticatedLive = Layer.effect(
  Authenticated,
  Effect.gen(function*() {
    const signer = yield* TokenSigner
    const users = yield* Users
    const sessions = yield* Sessions
    return Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const match = BEARER.exec(request.headers["authorization"] ?? "")
      if (match === null) return yield* AuthError.of(401, "no_authorization", "This endpoint requires a valid Bearer token")
      const verified = yield* signer.verify(match[1]!).pipe(
        Effect.mapError((invalid) => badJwt(invalid.reason === "expired" ? "token has invalid claims: token is expired" : "token is invalid"))
      )
      const { payload } = verified
      const sub = payload["sub"]
      // GoTrue's exact text: apps calling getUser with the anon key match on it to mean "not signed in".
      if (typeof sub !== "string" || sub === "") return yield* AuthError.of(403, "bad_jwt", "invalid claim: missing sub claim")
      if (!UUID.test(sub)) return yield* AuthError.of(400, "bad_jwt", "invalid claim: sub claim must be a UUID")
      const user = yield* users.findById(sub)
      if (Option.isNone(user)) return yield* AuthError.of(403, "user_not_found", "User from sub claim in JWT does not exist")
      const now = new Date(yield* Clock.currentTimeMillis)
      if (isBanned(user.value, now)) return yield* AuthError.of(403, "user_banned", "User is banned")
      const claim = payload["session_id"]
      const sessionId = typeof claim === "string" && claim !== "" && claim !== NIL_UUID ? claim : undefined
      if (sessionId !== undefined && (!UUID.test(sessionId) || !(yield* sessions.exists(sessionId)))) {
        return yield* AuthError.of(403, "session_not_found", "Session from session_id claim in JWT does not exist")
      }
      return { user: user.value, sessionId, claims: payload }
    })
  })
)
