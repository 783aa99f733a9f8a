import { type DescField, type DescMessage, type DescOneof, ScalarType } from "@bufbuild/protobuf"
import { isFieldError } from "@bufbuild/protobuf/reflect"

const SCALAR: Readonly<Record<ScalarType, string>> = {
  [ScalarType.STRING]: "a string",
  [ScalarType.BOOL]: "true or false",
  [ScalarType.BYTES]: "base64 bytes",
  [ScalarType.DOUBLE]: "a number",
  [ScalarType.FLOAT]: "a number",
  [ScalarType.INT32]: "a 32-bit integer",
  [ScalarType.SINT32]: "a 32-bit integer",
  [ScalarType.SFIXED32]: "a 32-bit integer",
  [ScalarType.UINT32]: "an unsigned 32-bit integer",
  [ScalarType.FIXED32]: "an unsigned 32-bit integer",
  [ScalarType.INT64]: "a 64-bit integer",
  [ScalarType.SINT64]: "a 64-bit integer",
  [ScalarType.SFIXED64]: "a 64-bit integer",
  [ScalarType.UINT64]: "an unsigned 64-bit integer",
  [ScalarType.FIXED64]: "an unsigned 64-bit integer"
}

const messageKind = (message: DescMessage): string =>
  message.typeName === "google.protobuf.Timestamp" ? "an RFC 3339 timestamp" : `a ${message.name} object`

const expected = (field: DescField): string => {
  switch (field.fieldKind) {
    case "scalar":
      return SCALAR[field.scalar]
    case "enum":
      return `one of the ${field.enum.name} names or numbers`
    case "message":
      return messageKind(field.message)
    case "list":
      return `a list of ${
        field.listKind === "scalar" ? SCALAR[field.scalar] : field.listKind === "enum" ? `${field.enum.name} values` : messageKind(field.message)
      }`
    case "map":
      return "an object"
  }
}

const isOneof = (field: DescField | DescOneof): field is DescOneof => field.kind === "oneof"

/**
 * Why a JSON value is not a `desc` request message, said so that a client can fix it and without the value:
 * protobuf-es's own messages quote what was sent ("…password from JSON: expected string, got 98765432"), and a
 * password or a token must not come back in an error, nor be written to a log from one. The field is named by
 * its proto name with the type it takes; an unknown key is not repeated (it is input too), the message's
 * fields are listed instead.
 */
export const jsonInputProblem = (desc: DescMessage, error: unknown): string => {
  const cause = error instanceof Error ? error.cause : undefined
  const fieldError = isFieldError(error) ? error : isFieldError(cause) ? cause : undefined
  if (fieldError !== undefined) {
    const field = fieldError.field()
    return isOneof(field)
      ? `only one of ${field.fields.map((f) => f.name).join(", ")} may be set`
      : fieldError.message === "set multiple times"
      ? `field ${field.name} is set more than once (by its proto and its JSON name)`
      : `field ${field.name} must be ${expected(field)}`
  }
  if (cause instanceof SyntaxError) return "request body is not valid JSON"
  const message = error instanceof Error ? error.message : ""
  if (/: duplicate object key ".*"$/s.test(message)) return "request body has a key more than once"
  if (/ key ".*" is unknown$/s.test(message)) {
    return `request has a field ${desc.name} does not define (its fields: ${desc.fields.map((f) => f.name).join(", ")})`
  }
  // Enum names sent as strings that name no value: protobuf-es reports them against the enum, not the field.
  const enumMatch = / from JSON: cannot decode (?:enum )?([\w.]+) from JSON/.exec(message) ??
    /^cannot decode enum ([\w.]+) from JSON/.exec(message)
  const enumField = enumMatch === null ? undefined : desc.fields.find((f) => f.enum?.typeName === enumMatch[1])
  if (enumField !== undefined) return `field ${enumField.name} must be ${expected(enumField)}`
  return `request body is not a valid ${desc.name} JSON object`
}
