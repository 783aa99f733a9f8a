import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Jwt from "../../platform/Jwt.js"
import { type Session, sessionIdOf } from "../contract/Session.js"
import { encodedResponse } from "./EncodedResponse.js"

/**
 * GoTrue's observability headers on every response that issues a session: who, which session, and the first
 * characters of the refresh token (enough to correlate a log line, too few to use).
 */
export const sessionHeaders = (session: Session): Record<string, string> => {
  // Noted when the token was signed; a Session copied from another (a weak password warning, provider tokens) has
  // lost the note, and its token says the same.
  const sessionId = sessionIdOf(session) ?? Option.match(Jwt.decode(session.access_token), {
    onNone: () => undefined,
    onSome: ({ payload }) => (typeof payload["session_id"] === "string" ? payload["session_id"] : undefined)
  })
  return {
    "sb-auth-user-id": session.user.id,
    ...(sessionId !== undefined ? { "sb-auth-session-id": sessionId } : {}),
    "sb-auth-refresh-token-prefix": session.refresh_token.slice(0, 5)
  }
}

/**
 * Answers a session with its headers, already encoded (encodedResponse); anything else (sign-up may answer a user)
 * is left to the contract's encoding.
 */
export const withSessionHeaders = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A | HttpServerResponse.HttpServerResponse, E, R> =>
  Effect.map(effect, (result) =>
    isSession(result) ? HttpServerResponse.setHeaders(encodedResponse(result), sessionHeaders(result)) : result)

const isSession = (value: unknown): value is Session =>
  typeof value === "object" && value !== null && "access_token" in value && "refresh_token" in value && "user" in value
