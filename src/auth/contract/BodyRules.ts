import type * as Schema from "effect/Schema"
import { CODE_CHALLENGE_PATTERN } from "../domain/Pkce.js"
import { CHALLENGE_METHOD_PATTERN, orEmpty } from "./InputSchemas.js"

/*
 * The rules of a request body that the services check after decoding, stated as JSON Schema in the document only
 * (InputSchemas.documented says why the decoder stays lenient).
 */

/** JSON Schema for "these fields are present": non-empty strings (null and "" count as absent, as in GoTrue). */
export const present = (...fields: ReadonlyArray<string>) => ({
  required: [...fields],
  properties: Object.fromEntries(fields.map((field) => [field, { type: "string", minLength: 1 }]))
})
/** The same, when the body's `type` is one of `types`. */
export const typed = (types: ReadonlyArray<string>, rule: ReturnType<typeof present>) => ({
  ...rule,
  properties: { ...rule.properties, type: { enum: [...types] } }
})
export const absent = (...fields: ReadonlyArray<string>) => ({ not: { anyOf: fields.map((field) => present(field)) } })
/** A body the services refuse unless it meets every rule (JSON Schema, stated in the document only). */
export const requiring = <S extends Schema.Schema.Any>(schema: S, ...rules: ReadonlyArray<Record<string, unknown>>) =>
  (schema as any).annotations({ jsonSchema: { allOf: rules } }) as S
/** PKCE (Pkce.parsePkce): a challenge and its method, both or neither. */
export const PKCE_PAIRED = { anyOf: [absent("code_challenge", "code_challenge_method"), present("code_challenge", "code_challenge_method")] }
/** The formats of CodeChallenge and CodeChallengeMethod, for a body that checks them only in some cases (/signup). */
export const PKCE_FORMATS = {
  properties: {
    code_challenge: { anyOf: [{ type: "null" }, { type: "string", pattern: orEmpty(CODE_CHALLENGE_PATTERN) }] },
    code_challenge_method: { anyOf: [{ type: "null" }, { type: "string", pattern: orEmpty(CHALLENGE_METHOD_PATTERN) }] }
  }
}
