import * as Schema from "effect/Schema"
import { JsonObject } from "./JsonObject.js"
import { Timestamp } from "./Timestamp.js"

/** One of a user's provider identities, as GoTrue writes it in a user's `identities`. */
export class Identity extends Schema.Class<Identity>("Identity")({
  identity_id: Schema.String,
  id: Schema.String,
  user_id: Schema.String,
  identity_data: JsonObject,
  provider: Schema.String,
  last_sign_in_at: Schema.optional(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
  email: Schema.optional(Schema.String)
}) {}
