import * as Schema from "effect/Schema"
import { Timestamp } from "./Timestamp.js"

/**
 * A session as its user, or an admin, sees it in a list: when it started and was last refreshed, the client that
 * signed in (its User-Agent and address, as recorded then), and its assurance level. None of its tokens or keys.
 */
export const SessionInfo = Schema.Struct({
  id: Schema.String,
  created_at: Schema.NullOr(Timestamp),
  updated_at: Schema.NullOr(Timestamp),
  refreshed_at: Schema.NullOr(Timestamp).annotations({ description: "When its refresh token was last exchanged (or when it started)" }),
  user_agent: Schema.NullOr(Schema.String),
  ip: Schema.NullOr(Schema.String).annotations({ description: "The client's address at sign-in: RATE_LIMIT_HEADER's first value when set, else the connection's peer" }),
  aal: Schema.NullOr(Schema.String),
  not_after: Schema.NullOr(Timestamp).annotations({ description: "When it ends whatever its refreshes (SAML), if ever" }),
  current: Schema.optional(Schema.Boolean).annotations({ description: "Whether the caller's access token belongs to it (GET /user/sessions only)" })
}).annotations({ identifier: "SessionInfo" })
export type SessionInfo = typeof SessionInfo.Type

/** A user's sessions in force, most recently started first; at most 100. */
export const SessionList = Schema.Struct({ sessions: Schema.Array(SessionInfo) }).annotations({ identifier: "SessionList" })
