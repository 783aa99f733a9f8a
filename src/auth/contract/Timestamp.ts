import * as Schema from "effect/Schema"

export const Timestamp = Schema.String.annotations({ description: "RFC 3339 timestamp" })
