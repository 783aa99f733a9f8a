import * as Schema from "effect/Schema"
import { Timestamp } from "./Timestamp.js"

/**
 * A second factor as GoTrue writes one (GET /user's `factors`, the admin factor routes). `phone` is always present
 * ("" unless a phone factor); `friendly_name`, `web_authn_aaguid` and `last_webauthn_challenge_data` are left out
 * when empty. The secret and the stored WebAuthn credential never leave the server.
 */
export class Factor extends Schema.Class<Factor>("Factor")({
  id: Schema.String,
  created_at: Timestamp,
  updated_at: Timestamp,
  status: Schema.Literal("unverified", "verified"),
  friendly_name: Schema.optional(Schema.String),
  factor_type: Schema.Literal("totp", "phone", "webauthn"),
  phone: Schema.String,
  last_challenged_at: Schema.NullOr(Timestamp),
  web_authn_aaguid: Schema.optional(Schema.String),
  last_webauthn_challenge_data: Schema.optional(Schema.Unknown)
}) {}
