import { Schema } from "effect"

export const Timestamp = Schema.String.annotations({ description: "RFC 3339 timestamp" })
