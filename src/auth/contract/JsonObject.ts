import * as Schema from "effect/Schema"

/** A JSON object whose keys the contract leaves open (metadata, claims, identity data). */
export const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })
