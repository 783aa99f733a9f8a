import * as Schema from "effect/Schema"
import { User } from "./User.js"

/** A signed-in session, as /token, /signup and /verify answer it. */
export class Session extends Schema.Class<Session>("Session")({
  access_token: Schema.String,
  token_type: Schema.Literal("bearer"),
  expires_in: Schema.Int,
  expires_at: Schema.Int,
  refresh_token: Schema.String,
  user: User,
  /** The provider's tokens, after a sign-in with an external provider (the PKCE exchange of its code). */
  provider_token: Schema.optional(Schema.String),
  provider_refresh_token: Schema.optional(Schema.String),
  weak_password: Schema.optional(Schema.Struct({ message: Schema.String, reasons: Schema.Array(Schema.String) }))
}) {}

/**
 * The session id a Session's access token carries, kept beside it by whoever signed the token (AccessTokens.respond)
 * so the response headers need not decode the token again. A symbol, and not enumerable: JSON.stringify, Schema
 * encoding, spreads and equality all ignore it, so the wire bytes cannot change.
 */
const SESSION_ID: unique symbol = Symbol("gatehouse/Session/session_id")

/** Notes the id of the session the access token was signed for; returns the same Session. */
export const withSessionId = (session: Session, sessionId: string): Session =>
  Object.defineProperty(session, SESSION_ID, { value: sessionId, enumerable: false, writable: false, configurable: false })

/** The id withSessionId noted, if any (a Session built by copying another has none). */
export const sessionIdOf = (session: Session): string | undefined => {
  const id: unknown = (session as unknown as Record<symbol, unknown>)[SESSION_ID]
  return typeof id === "string" ? id : undefined
}
