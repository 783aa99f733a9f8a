import { Schema } from "effect"
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
