import * as Schema from "effect/Schema"
import { documented } from "../contract/InputSchemas.js"

/** Pagination.parsePage: digits, or nothing for the default; per_page not zero. */
export const PageParam = Schema.optional(documented({ pattern: "^[0-9]{0,15}$" }, "Default 1"))
export const PerPageParam = Schema.optional(documented({ pattern: "^((?!0+$)[0-9]{1,15})?$" }, "Default 50, at most 1000"))
