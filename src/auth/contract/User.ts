import * as Schema from "effect/Schema"
import { Factor } from "./Factor.js"
import { Identity } from "./Identity.js"
import { JsonObject } from "./JsonObject.js"
import { Timestamp } from "./Timestamp.js"

/** A user as GoTrue writes one: GET /user, the admin routes, a session's `user`. */
export class User extends Schema.Class<User>("User")({
  id: Schema.String,
  aud: Schema.String,
  role: Schema.String,
  email: Schema.String,
  email_confirmed_at: Schema.optional(Timestamp),
  phone: Schema.String,
  phone_confirmed_at: Schema.optional(Timestamp),
  confirmation_sent_at: Schema.optional(Timestamp),
  confirmed_at: Schema.optional(Timestamp),
  recovery_sent_at: Schema.optional(Timestamp),
  new_email: Schema.optional(Schema.String),
  email_change_sent_at: Schema.optional(Timestamp),
  new_phone: Schema.optional(Schema.String),
  phone_change_sent_at: Schema.optional(Timestamp),
  reauthentication_sent_at: Schema.optional(Timestamp),
  last_sign_in_at: Schema.optional(Timestamp),
  app_metadata: JsonObject,
  user_metadata: JsonObject,
  /** Every factor, unverified ones too; left out when the user has none. */
  factors: Schema.optional(Schema.Array(Factor)),
  identities: Schema.Array(Identity),
  created_at: Timestamp,
  updated_at: Timestamp,
  is_anonymous: Schema.Boolean,
  invited_at: Schema.optional(Timestamp),
  banned_until: Schema.optional(Timestamp),
  /** A soft-deleted user (GoTrue's admin delete with should_soft_delete), as the admin API still reads it. */
  deleted_at: Schema.optional(Timestamp)
}) {}
