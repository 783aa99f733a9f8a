import * as Schema from "effect/Schema"
import { EMAIL_PATTERN, MAX_EMAIL_LENGTH } from "../domain/Email.js"
import { PHONE_PATTERN } from "../domain/Phone.js"
import { CODE_CHALLENGE_PATTERN } from "../domain/Pkce.js"
import { JsonObject } from "./JsonObject.js"

/*
 * What the features' request schemas are built from: text and objects without NUL, GoTrue's null-as-absent, and
 * fields whose rules the document states while the services check them.
 */

// PostgreSQL cannot store U+0000 in text or jsonb; refusing it here keeps it a 400 instead of a database error.
const hasNul = (value: unknown): boolean =>
  typeof value === "string"
    ? value.includes("\u0000")
    : Array.isArray(value)
    ? value.some(hasNul)
    : typeof value === "object" && value !== null
    ? Object.entries(value).some(([key, v]) => key.includes("\u0000") || hasNul(v))
    : false
const noNul = { message: () => "must not contain the NUL character", jsonSchema: { pattern: "^[^\\u0000]*$" } }
export const InputString = Schema.String.pipe(Schema.filter((s) => !hasNul(s), noNul))
export const InputObject = JsonObject.pipe(Schema.filter((o) => !hasNul(o), noNul))
/** Any JSON value without NUL, for a field the service decodes with its own messages. */
export const InputJson = Schema.Unknown.pipe(Schema.filter((v) => !hasNul(v), noNul))
/** GoTrue treats a JSON null like an absent field. */
export const OptionalString = Schema.optional(Schema.NullOr(InputString))
export const OptionalObject = Schema.optional(Schema.NullOr(InputObject))
/** A query or path parameter: text without NUL, which PostgreSQL could not compare against (a 500 otherwise). */
export const OptionalParam = Schema.optional(InputString)

/*
 * Fields whose rules the services check after decoding (with GoTrue's own messages, so the decoder stays lenient):
 * the document states the rules, so a client generated from it, or a tester, sends what the server accepts.
 */
export const documented = (jsonSchema: Record<string, unknown>, description?: string) =>
  InputString.annotations({ jsonSchema, ...(description === undefined ? {} : { description }) })
/** A body field's pattern, where the services read "" as absent (GoTrue's zero value), as they read null. */
export const orEmpty = (pattern: string) => `^$|${pattern}`
const EmailString = documented(
  { pattern: orEmpty(EMAIL_PATTERN), maxLength: MAX_EMAIL_LENGTH },
  "An email address, its local part at most 64 characters (\"\" counts as absent)"
)
const PhoneString = documented({ pattern: orEmpty(PHONE_PATTERN) }, "A phone number in E.164, with or without the leading + (\"\" counts as absent)")
export const OneOf = (values: ReadonlyArray<string>, description?: string) => documented({ enum: [...values] }, description)
export const OptionalEmail = Schema.optional(Schema.NullOr(EmailString))
/** EmailString's format as JSON Schema, for a field that has it only in some cases (GenerateLinkPayload's new_email). */
export const EMAIL_FORMAT = { type: "string", pattern: orEmpty(EMAIL_PATTERN), maxLength: MAX_EMAIL_LENGTH }
export const OptionalPhone = Schema.optional(Schema.NullOr(PhoneString))
/** PKCE (Pkce.parsePkce): a challenge of 43 to 128 characters and its method, both or neither. */
export const CHALLENGE_METHOD_PATTERN = "^([sS]256|[pP][lL][aA][iI][nN])$"
export const CodeChallenge = Schema.optional(Schema.NullOr(documented({ pattern: orEmpty(CODE_CHALLENGE_PATTERN) })))
export const CodeChallengeMethod = Schema.optional(Schema.NullOr(documented({ pattern: orEmpty(CHALLENGE_METHOD_PATTERN) }, "s256 or plain, in any case")))
export const MetaSecurity = Schema.optional(Schema.NullOr(Schema.Struct({ captcha_token: OptionalString })))

/** Query parameters; `required` names the ones the handler refuses to go without (decoded as optional: GoTrue's error). */
export const QueryParams = <F extends Schema.Struct.Fields>(fields: F, required: ReadonlyArray<keyof F & string> = []) =>
  required.length === 0 ? Schema.Struct(fields) : Schema.Struct(fields).annotations({ jsonSchema: { required: [...required] } })

export const RedirectParam = QueryParams({ redirect_to: OptionalParam })
