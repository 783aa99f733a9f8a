import { type DescEnum, type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf"
import { GUARDS, needsCredentials, type Operation } from "../domain/Guards.js"
import type { IamCode } from "../domain/IamError.js"
import { httpStatusOf, IAM_CODES } from "../domain/IamStatus.js"
import { IAM_SERVICES, methodOf } from "../IamContract.js"
import { IAM_RPC_PATH } from "../rpc/IamRpcRoutes.js"
import { REST_ROUTES } from "./IamRestRoutes.js"

type JsonObject = Record<string, any>

const IAM_TAG = "IAM"

const IAM_BEARER = "iamBearer"
const ERROR_SCHEMA = "IamError"
const KEYS_SCHEMA = "IamPublishedKeys"

/** Public operations that read a token from the request and fall back to the bearer token when it is empty (IamHandlers). */
const TOKEN_OR_BEARER: ReadonlySet<Operation> = new Set(["Logout", "ValidateToken"])

const ref = (name: string): JsonObject => ({ $ref: `#/components/schemas/${name}` })
const json = (schema: JsonObject): JsonObject => ({ "application/json": { schema } })

const SCALARS: Readonly<Record<ScalarType, JsonObject>> = {
  [ScalarType.DOUBLE]: { type: "number" },
  [ScalarType.FLOAT]: { type: "number" },
  // proto3 JSON writes 64-bit integers as strings.
  [ScalarType.INT64]: { type: "string", format: "int64" },
  [ScalarType.UINT64]: { type: "string", format: "uint64" },
  [ScalarType.INT32]: { type: "integer", format: "int32" },
  [ScalarType.FIXED64]: { type: "string", format: "uint64" },
  [ScalarType.FIXED32]: { type: "integer", format: "uint32" },
  [ScalarType.BOOL]: { type: "boolean" },
  [ScalarType.STRING]: { type: "string" },
  [ScalarType.BYTES]: { type: "string", format: "byte" },
  [ScalarType.UINT32]: { type: "integer", format: "uint32" },
  [ScalarType.SFIXED32]: { type: "integer", format: "int32" },
  [ScalarType.SFIXED64]: { type: "string", format: "int64" },
  [ScalarType.SINT32]: { type: "integer", format: "int32" },
  [ScalarType.SINT64]: { type: "string", format: "int64" }
}

/** A short enum name (USER for RESOURCE_TYPE_USER) in any case, as acceptShortEnumNames reads it. */
const anyCase = (word: string): string =>
  [...word].map((c) => /[a-z]/i.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("")

const enumSchema = (desc: DescEnum): JsonObject => {
  const prefix = desc.values.map((v) => v.name).reduce((common, name) => {
    let i = 0
    while (i < common.length && common[i] === name[i]) i++
    return common.slice(0, i)
  })
  const shortNames = desc.values.filter((v) => v.number !== 0).map((v) => v.name.slice(prefix.lastIndexOf("_") + 1))
  return {
    description: "Responses use the full name; a request may also give the short name (USER for RESOURCE_TYPE_USER) in any case, or the number",
    anyOf: [
      { type: "string", enum: desc.values.map((v) => v.name) },
      { type: "string", pattern: `^(${shortNames.map(anyCase).join("|")})$` },
      { type: "integer", minimum: -2147483648, maximum: 2147483647 }
    ]
  }
}

/** A request field in the proto3 JSON mapping as protobuf-es reads it: null for the default, 32-bit integers also as strings. */
const requestField = (schema: JsonObject): JsonObject => {
  const integer = schema["type"] === "integer"
  const long = schema["type"] === "string" && /int64$/.test(schema["format"] ?? "")
  return {
    anyOf: [
      schema,
      ...(integer ? [{ type: "string", pattern: "^-?[0-9]{1,10}$", description: "The number as a string" }] : []),
      ...(long ? [{ type: "integer", description: "The number" }] : []),
      { type: "null", description: "The field's default" }
    ]
  }
}

/**
 * JSON Schemas of proto messages under their full names (`gatehouse.iam.v1.RegisterRequest`), in the proto3 JSON
 * mapping with the proto field names that responses use. A request message's fields also take what protobuf-es
 * reads for them (null, numbers as strings).
 */
const messageSchemas = (roots: ReadonlyArray<DescMessage>, requests: ReadonlySet<string>): Record<string, JsonObject> => {
  const schemas: Record<string, JsonObject> = {}
  const messageRef = (desc: DescMessage): JsonObject => {
    if (desc.typeName === "google.protobuf.Timestamp") return { type: "string", format: "date-time" }
    if (schemas[desc.typeName] === undefined) {
      // Claimed before the fields are walked, so a message that contains itself ends here.
      schemas[desc.typeName] = {}
      schemas[desc.typeName] = {
        type: "object",
        description: `The proto message ${desc.typeName}`,
        properties: Object.fromEntries(desc.fields.map((field) =>
          [field.name, requests.has(desc.typeName) ? requestField(fieldSchema(field)) : fieldSchema(field)]))
      }
    }
    return ref(desc.typeName)
  }
  const fieldSchema = (field: DescField): JsonObject => {
    switch (field.fieldKind) {
      case "scalar":
        return SCALARS[field.scalar]
      case "enum":
        return enumSchema(field.enum)
      case "message":
        return messageRef(field.message)
      case "list":
        return {
          type: "array",
          items: field.listKind === "scalar" ? SCALARS[field.scalar] : field.listKind === "enum" ? enumSchema(field.enum) : messageRef(field.message)
        }
      case "map":
        return {
          type: "object",
          additionalProperties: field.mapKind === "scalar" ? SCALARS[field.scalar] : field.mapKind === "enum" ? enumSchema(field.enum) : messageRef(field.message)
        }
    }
  }
  roots.forEach(messageRef)
  return schemas
}

const serviceOf = (operation: Operation): string =>
  IAM_SERVICES.find((service) => service.methods.some((m) => m.name === operation))!.typeName

const idParameter = (name: string): JsonObject =>
  name === "user_id"
    ? {
      name,
      in: "path",
      required: true,
      description: "A user id (at most 2147483647; a larger one is invalid_argument), or `me` for the caller (named by the bearer token)",
      schema: { type: "string", pattern: "^([0-9]{1,10}|me)$" }
    }
    : {
      name,
      in: "path",
      required: true,
      description: "An id (at most 2147483647; a larger one is invalid_argument)",
      schema: { type: "string", pattern: "^[0-9]{1,10}$" }
    }

const securityOf = (operation: Operation): Array<JsonObject> =>
  needsCredentials(GUARDS[operation]) ? [{ [IAM_BEARER]: [] }]
  : TOKEN_OR_BEARER.has(operation) ? [{}, { [IAM_BEARER]: [] }]
  : []

/**
 * The codes an operation can fail with: a request refused by its message's rules, an outage, a body over the limit,
 * and per guard: a guarded operation's missing or refused credentials. Every operation reads and writes rows, so any
 * may find a name taken, an id missing or a precondition unmet; Login and the token operations also refuse a
 * credential (unauthenticated) and throttle (resource_exhausted). `internal` is a bug, not part of the contract.
 */
const codesOf = (operation: Operation): ReadonlyArray<IamCode> =>
  IAM_CODES.filter((code) =>
    code !== "internal" && (code !== "permission_denied" || needsCredentials(GUARDS[operation])))

/** Connect's error body at one status, with the codes that travel with it. */
const errorResponses = (codes: ReadonlyArray<IamCode>): JsonObject => {
  const byStatus = new Map<number, Array<string>>([[413, ["resource_exhausted"]]])
  for (const code of codes) byStatus.set(httpStatusOf(code), [...(byStatus.get(httpStatusOf(code)) ?? []), code])
  return Object.fromEntries([...byStatus].sort(([a], [b]) => a - b).map(([status, names]) => [status, {
    description: `${names.map((n) => `\`${n}\``).join(", ")}: Connect's error body, the status following the code (413: a body over AUTH_IAM_MAX_MESSAGE_BYTES)` +
      (status === 429 ? "; Retry-After says when to ask again" : ""),
    ...(status === 429 ? { headers: { "retry-after": { description: "Whole seconds to wait", schema: { type: "string" } } } } : {}),
    content: json({
      allOf: [ref(ERROR_SCHEMA)],
      properties: { code: { type: "string", enum: [...new Set(names)] } }
    })
  }]))
}

/**
 * The statuses at which a well-formed request can be refused for what it carries: proto3 messages have no required
 * fields or formats, so the service's own rules (docs/iam.md: usernames, passwords, names) answer invalid_argument
 * and failed_precondition, both 400, as grpc-gateway does.
 */
const REFUSES_WELL_FORMED = "x-refuses-well-formed"

const restPaths = (): Record<string, JsonObject> => {
  const paths: Record<string, JsonObject> = {}
  for (const route of REST_ROUTES) {
    const method = methodOf(route.operation)
    const path = route.path.replace(/:(\w+)/g, "{$1}")
    const params = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]!)
    const shared = REST_ROUTES.filter((r) => r.operation === route.operation).length > 1
    const operation: JsonObject = {
      tags: [IAM_TAG],
      operationId: shared ? `iam.${route.operation}.${route.method.toLowerCase()}` : `iam.${route.operation}`,
      summary: route.operation,
      description:
        `${method.input.typeName} → ${method.output.typeName}; also served over gRPC and Connect as ` +
        `\`${serviceOf(route.operation)}/${route.operation}\` on the IAM port.` +
        (params.length > 0 ? " Path parameters fill the request message's fields of the same name." : ""),
      parameters: params.map(idParameter),
      security: securityOf(route.operation),
      responses: { 200: { description: method.output.typeName, content: json(ref(method.output.typeName)) }, ...errorResponses(codesOf(route.operation)) },
      [REFUSES_WELL_FORMED]: [400]
    }
    if (route.method === "POST") {
      operation["requestBody"] = { required: false, description: method.input.typeName, content: json(ref(method.input.typeName)) }
    }
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation }
  }
  paths["/auth/keys"] = {
    get: {
      tags: [IAM_TAG],
      operationId: "iam.keys",
      summary: "Keys",
      description: "The public keys that verify IAM access tokens (PASETO v4.public, as PASERK k4.public), for resource servers.",
      parameters: [],
      security: [],
      responses: { 200: { description: "The published keys", content: json(ref(KEYS_SCHEMA)) } }
    }
  }
  paths[IAM_RPC_PATH] = {
    post: {
      tags: [IAM_TAG],
      operationId: "iam.rpc",
      summary: "RPC",
      description: "The same operations as an @effect/rpc group (NDJSON serialization), for Effect clients.",
      parameters: [],
      security: [],
      // The protocol is @effect/rpc's, in-band: the HTTP answer is 200 whatever the body holds, and a line that is no
      // request is answered (or dropped) inside the stream. So the document states no shape the HTTP layer checks.
      requestBody: {
        required: false,
        description: "NDJSON: one @effect/rpc request per line. The answer is 200 for any body; a line that is not a " +
          "request of the group is answered with a protocol error in the stream, or ignored.",
        content: { "application/ndjson": { schema: { description: "NDJSON text" } } }
      },
      responses: { 200: { description: "The RPC replies", content: { "application/ndjson": { schema: { type: "string" } } } } }
    }
  }
  // The IAM routes live at the root only: the auth API's `/auth/v1` server does not apply to them.
  return Object.fromEntries(Object.entries(paths).map(([path, item]) => [path, { servers: [{ url: "/" }], ...item }]))
}

const TAG_DESCRIPTION =
  "The IAM service's REST routes, served on this port when the IAM service is enabled. The same operations are " +
  "served over gRPC and Connect on the IAM port (contract: proto/gatehouse/iam/v1/iam.proto). A body is the " +
  "request message in the proto3 JSON mapping (field names in snake_case or camelCase; enums by name, short name " +
  "or number); a response is the response message with snake_case names and every field present."

/** Adds the IAM service's routes on the main port to an OpenAPI document, derived from REST_ROUTES and the proto contract. */
export const documentIamRoutes = (spec: JsonObject): JsonObject => {
  const methods = REST_ROUTES.map((route) => methodOf(route.operation))
  return {
    ...spec,
    tags: [...(spec["tags"] ?? []), { name: IAM_TAG, description: TAG_DESCRIPTION }],
    paths: { ...spec["paths"], ...restPaths() },
    components: {
      ...spec["components"],
      schemas: {
        ...spec["components"]?.["schemas"],
        ...messageSchemas(methods.flatMap((m) => [m.input, m.output]), new Set(methods.map((m) => m.input.typeName))),
        [ERROR_SCHEMA]: {
          type: "object",
          required: ["code", "message"],
          properties: { code: { type: "string", description: "A Connect error code, e.g. not_found" }, message: { type: "string" } }
        },
        [KEYS_SCHEMA]: {
          type: "object",
          required: ["keys"],
          properties: {
            keys: {
              type: "array",
              items: {
                type: "object",
                required: ["kid", "version", "purpose", "paserk"],
                properties: {
                  kid: { type: "string" },
                  version: { type: "string", enum: ["v4"] },
                  purpose: { type: "string", enum: ["public"] },
                  paserk: { type: "string", description: "PASERK k4.public" }
                }
              }
            }
          }
        }
      },
      securitySchemes: {
        ...spec["components"]?.["securitySchemes"],
        [IAM_BEARER]: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "PASETO",
          description: "An IAM access token (PASETO v4.public) from Login, RefreshToken or GenerateToken"
        }
      }
    }
  }
}
