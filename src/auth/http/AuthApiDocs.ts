import * as HttpApi from "@effect/platform/HttpApi"
import * as Option from "effect/Option"
import { type AuthErrorDeclaration, AuthErrors } from "./AuthErrors.js"
import { API_VERSION_2024_01_01, API_VERSION_HEADER, ERROR_CODE_HEADER, RETRY_AFTER_HEADER } from "./ErrorEnvelope.js"

type JsonObject = Record<string, any>

/**
 * The extension on an operation that lists the statuses (400, 422) at which it refuses a request the document calls
 * valid, for what the request's data meets rather than for its form. A strict tester expects a well-formed request
 * to pass or to get 401, 403, 404 or 409; GoTrue answers these cases 400 or 422, and so does Gatehouse.
 */
export const REFUSES_WELL_FORMED = "x-refuses-well-formed"

/** The request header that chooses the error envelope (ErrorEnvelope.requestedApiVersion). */
const API_VERSION_PARAMETER: JsonObject = {
  name: "X-Supabase-Api-Version",
  in: "header",
  required: false,
  description: `\`${API_VERSION_2024_01_01}\` (or a later date) asks for errors as \`{code, message}\` with \`code\` the error code, ` +
    "as auth-js does; without it (or with an earlier date, or anything else) errors are GoTrue's legacy `{code, error_code, msg}`.",
  schema: { type: "string" }
}

const ENVELOPE_DESCRIPTION = `GoTrue's error envelope. With \`X-Supabase-Api-Version: ${API_VERSION_2024_01_01}\` (or later) ` +
  "`{code: <error code>, message}`, and the header echoed; otherwise the legacy `{code: <HTTP status>, error_code, msg}` " +
  "(a 5xx also carries `error_id`, the request id). `weak_password` adds `weak_password: {reasons}`. The error code is " +
  `also in the \`${ERROR_CODE_HEADER}\` header.`

const weakPassword: JsonObject = {
  type: "object",
  required: ["reasons"],
  properties: { reasons: { type: "array", items: { type: "string", enum: ["length", "characters", "pwned"] } } }
}

const codeSchema = (codes: ReadonlyArray<string>): JsonObject => ({ type: "string", enum: [...codes] })

/** The envelopes ErrorEnvelope.renderError writes for these codes at this status. */
const envelopeSchema = (status: number, codes: ReadonlyArray<string>): JsonObject => {
  const extra = codes.includes("weak_password") ? { weak_password: weakPassword } : {}
  return {
    oneOf: [
      {
        title: "legacy",
        type: "object",
        required: ["code", "error_code", "msg", ...(status >= 500 ? ["error_id"] : [])],
        properties: {
          code: { type: "integer", const: status },
          error_code: codeSchema(codes),
          msg: { type: "string" },
          ...(status >= 500 ? { error_id: { type: "string", description: "The request id, to find the log line" } } : {}),
          ...extra
        }
      },
      {
        title: API_VERSION_2024_01_01,
        type: "object",
        required: ["code", "message"],
        properties: { code: codeSchema(codes), message: { type: "string" }, ...extra }
      }
    ]
  }
}

const oauthSchema = (codes: ReadonlyArray<string>): JsonObject => ({
  title: "OAuth error",
  type: "object",
  required: ["error", "error_description"],
  properties: { error: codeSchema(codes), error_description: { type: "string" } }
})

const errorHeaders = (status: number, declarations: ReadonlyArray<AuthErrorDeclaration>): JsonObject => ({
  ...(declarations.some((d) => d.kind !== "oauth")
    ? {
      [ERROR_CODE_HEADER]: { description: "The error code", schema: { type: "string" } },
      [API_VERSION_HEADER]: { description: "Echoed when the request asked for an API version", schema: { type: "string" } }
    }
    : {}),
  ...(status === 429
    ? { [RETRY_AFTER_HEADER]: { required: true, description: "Whole seconds until asking again can succeed", schema: { type: "string", pattern: "^[1-9][0-9]*$" } } }
    : {})
})

/** One status's response: every declaration at that status merged, envelope and OAuth-style bodies side by side. */
const errorResponse = (status: number, declarations: ReadonlyArray<AuthErrorDeclaration>): JsonObject => {
  const codes = [...new Set(declarations.filter((d) => d.kind !== "oauth").flatMap((d) => d.codes))]
  const oauth = [...new Set(declarations.filter((d) => d.kind === "oauth").flatMap((d) => d.codes))]
  const schemas = [...(codes.length > 0 ? [envelopeSchema(status, codes)] : []), ...(oauth.length > 0 ? [oauthSchema(oauth)] : [])]
  const notes = [...new Set(declarations.flatMap((d) => d.note === undefined ? [] : [d.note]))]
  const description = [
    ...(codes.length > 0 ? [`${codes.map((c) => `\`${c}\``).join(", ")}. ${ENVELOPE_DESCRIPTION}`] : []),
    ...(oauth.length > 0 ? [`GoTrue's OAuth-style error \`{error, error_description}\` (${oauth.map((c) => `\`${c}\``).join(", ")}), in every API version.`] : []),
    ...notes
  ].join(" ")
  return {
    description,
    headers: errorHeaders(status, declarations),
    content: { "application/json": { schema: schemas.length === 1 ? schemas[0] : { oneOf: schemas } } }
  }
}

const bearerOf = (pointer: string): JsonObject => ({ "header.Authorization": `Bearer {$response.body#${pointer}}` })
const userIdOf = { "path.user_id": "$response.body#/id" }

/** What a session answer leads to: refreshing it, and the signed-in user's own routes with its access token. */
const SESSION_LINKS: JsonObject = {
  RefreshSession: {
    operationId: "token.token",
    description: "The session's refresh token, exchanged for a new session",
    parameters: { "query.grant_type": "refresh_token" },
    requestBody: { refresh_token: "$response.body#/refresh_token" }
  },
  GetUser: { operationId: "profile.getUser", description: "The signed-in user", parameters: bearerOf("/access_token") },
  UpdateUser: { operationId: "profile.updateUser", description: "Changes to the signed-in user", parameters: bearerOf("/access_token") },
  Logout: { operationId: "logout.logout", description: "Ends the session", parameters: bearerOf("/access_token") }
}

/** What a user made by an admin leads to: the admin routes about that user. */
const ADMIN_USER_LINKS: JsonObject = {
  GetUser: { operationId: "adminUsers.getUser", parameters: userIdOf },
  UpdateUser: { operationId: "adminUsers.updateUser", parameters: userIdOf },
  ListFactors: { operationId: "adminFactors.listFactors", parameters: userIdOf },
  DeleteUser: { operationId: "adminUsers.deleteUser", parameters: userIdOf }
}

/**
 * The OpenAPI links of each operation's success, by operationId (`group.endpoint`): how an answer's values feed the
 * next request, so a client or a stateful tester can chain sign-up → token → user, and create → read → delete.
 */
export const AUTH_LINKS: Readonly<Record<string, JsonObject>> = {
  "signup.signup": SESSION_LINKS,
  "token.token": SESSION_LINKS,
  "verify.verify": SESSION_LINKS,
  "profile.getUser": {
    UnlinkIdentity: {
      operationId: "identities.unlinkIdentity",
      description: "Removes one of the user's identities (with manual linking on)",
      parameters: { "path.identity_id": "$response.body#/identities/0/identity_id" }
    }
  },
  "adminUsers.createUser": ADMIN_USER_LINKS,
  "adminUsers.createUserWithId": ADMIN_USER_LINKS,
  "adminUsers.updateUser": { GetUser: ADMIN_USER_LINKS["GetUser"], DeleteUser: ADMIN_USER_LINKS["DeleteUser"] },
  "invite.invite": ADMIN_USER_LINKS,
  "adminLinks.generateLink": {
    ...ADMIN_USER_LINKS,
    Verify: {
      operationId: "verify.verify",
      description: "The link's token, verified as the mail's link would be",
      requestBody: { type: "$response.body#/verification_type", token_hash: "$response.body#/hashed_token" }
    }
  }
}

/**
 * Operations that authenticate their caller themselves, by more than one scheme, where no middleware declares it:
 * token introspection takes the service role's bearer JWT or an OAuth client's credentials (Basic, or
 * client_secret_post in the form, which no security scheme can name, so the description says so), and answers anyone
 * else RFC 6749's 401.
 */
const OWN_SECURITY: Readonly<Record<string, ReadonlyArray<JsonObject>>> = {
  "oauthIntrospection.introspect": [{ serviceRole: [] }, { oauthClient: [] }]
}

const OWN_SECURITY_SCHEMES: JsonObject = {
  oauthClient: {
    type: "http",
    scheme: "basic",
    description: "A confidential OAuth client: its client_id and client_secret, each form-url-encoded (RFC 6749 §2.3.1)"
  }
}

const PASSWORD_EXAMPLE = "correct horse battery staple"

/**
 * Request bodies as auth-js sends them, per operation: documentation for a reader, and the cases a tester's examples
 * phase sends first. Each is valid by the document; what the server answers also depends on what it holds (a second
 * sign-up of the same address is 422 user_already_exists).
 */
const REQUEST_EXAMPLES: Readonly<Record<string, Readonly<Record<string, { summary: string; value: JsonObject }>>>> = {
  "signup.signup": {
    email: { summary: "An email address and a password", value: { email: "ada@example.com", password: PASSWORD_EXAMPLE, data: { name: "Ada" } } },
    anonymous: { summary: "An anonymous sign-in", value: { data: { name: "Ada" } } }
  },
  "otp.otp": { email: { summary: "A magic link or code by mail", value: { email: "ada@example.com", create_user: true } } },
  "otp.magiclink": { email: { summary: "A magic link by mail", value: { email: "ada@example.com" } } },
  "recover.recover": { email: { summary: "A password reset by mail", value: { email: "ada@example.com" } } },
  "resend.resend": { signup: { summary: "The sign-up confirmation again", value: { type: "signup", email: "ada@example.com" } } },
  "factors.enroll": {
    totp: { summary: "A TOTP factor (an authenticator app)", value: { factor_type: "totp", friendly_name: "Phone app" } },
    phone: { summary: "A phone factor (codes by text)", value: { factor_type: "phone", phone: "+15551234567" } }
  },
  "profile.updateUser": { data: { summary: "New user metadata", value: { data: { name: "Ada Lovelace" } } } },
  "adminUsers.createUser": {
    confirmed: {
      summary: "A user whose address is confirmed",
      value: { email: "grace@example.com", password: PASSWORD_EXAMPLE, email_confirm: true, user_metadata: { name: "Grace" } }
    }
  },
  "adminLinks.generateLink": {
    signup: { summary: "A sign-up link, not mailed", value: { type: "signup", email: "alan@example.com", password: PASSWORD_EXAMPLE } }
  },
  "invite.invite": { invite: { summary: "An invitation by mail", value: { email: "linus@example.com", data: { team: "kernel" } } } }
}

/**
 * GoTrue ignores the fields of a body it does not know (and so does the decoder here): a request schema never
 * forbids additional properties, whatever the generator writes for a struct.
 */
const allowAdditional = (schema: unknown): unknown =>
  Array.isArray(schema)
    ? schema.map(allowAdditional)
    : typeof schema === "object" && schema !== null
    ? Object.fromEntries(Object.entries(schema).filter(([key, value]) => !(key === "additionalProperties" && value === false))
      .map(([key, value]) => [key, allowAdditional(value)]))
    : schema

/** The longest path parameter the router reads (find-my-way's maxParamLength, in UTF-16 code units, once decoded). */
const MAX_PATH_PARAMETER = 100

/** A path whose parameter is longer matches no route: the server's 404 for an unknown path. */
const LONG_PARAMETER: AuthErrorDeclaration = {
  status: 404,
  codes: ["not_found"],
  kind: "invalid",
  note: `\`not_found\`: a path parameter over ${MAX_PATH_PARAMETER} characters (UTF-16 code units) matches no route.`
}

const openApiPath = (path: string): string => path.replace(/:(\w+)\??/g, "{$1}")

/** Drops component schemas that nothing refers to any more (the platform's decode error, once replaced). */
const pruneSchemas = (document: JsonObject): JsonObject => {
  const schemas: JsonObject = document["components"]?.["schemas"] ?? {}
  const used = new Set<string>()
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(visit)
    else if (typeof value === "object" && value !== null) {
      for (const [key, inner] of Object.entries(value)) {
        if (key === "$ref" && typeof inner === "string" && inner.startsWith("#/components/schemas/")) {
          const name = decodeURIComponent(inner.slice("#/components/schemas/".length))
          if (!used.has(name)) {
            used.add(name)
            visit(schemas[name])
          }
        } else visit(inner)
      }
    }
  }
  visit({ ...document, components: { ...document["components"], schemas: {} } })
  return {
    ...document,
    components: { ...document["components"], schemas: Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name))) }
  }
}

/**
 * The auth API's document as the server answers: the platform's generator gives the paths, parameters, bodies and
 * successes from the contract; this replaces every error response with GoTrue's envelopes and codes as the contract
 * declares them (AuthErrors, on the API, its groups, middleware and endpoints), marks the statuses a well-formed
 * request can be refused with, and documents the header that chooses the envelope.
 */
export const documentAuthApi = (api: HttpApi.HttpApi.Any) => (spec: JsonObject): JsonObject => {
  const document: JsonObject = structuredClone(spec)
  HttpApi.reflect(api as any, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, errors }) => {
      const operation: JsonObject | undefined = document["paths"]?.[openApiPath(endpoint.path)]?.[endpoint.method.toLowerCase()]
      if (operation === undefined) return
      const responses: JsonObject = operation["responses"]
      for (const status of Object.keys(responses)) if (Number(status) >= 400) delete responses[status]
      const refused: Array<number> = []
      const declared = new Map<number, ReadonlyArray<AuthErrorDeclaration>>()
      for (const [status, { ast }] of errors) {
        const declarations = Option.match(ast, { onNone: () => [], onSome: AuthErrors.declaredIn })
        if (declarations.length > 0) declared.set(status, declarations)
      }
      if (endpoint.path.includes(":")) declared.set(404, [...(declared.get(404) ?? []), LONG_PARAMETER])
      for (const [status, declarations] of declared) {
        responses[status] = errorResponse(status, declarations)
        if ((status === 400 || status === 422) && declarations.some((d) => d.kind !== "invalid")) refused.push(status)
      }
      for (const parameter of operation["parameters"] ?? []) {
        if (parameter["in"] === "path") parameter["schema"] = { ...parameter["schema"], maxLength: MAX_PATH_PARAMETER }
      }
      if (refused.length > 0) operation[REFUSES_WELL_FORMED] = refused.sort()
      const security = OWN_SECURITY[operation["operationId"]]
      if (security !== undefined) operation["security"] = security
      const links = AUTH_LINKS[operation["operationId"]]
      if (links !== undefined && responses["200"] !== undefined) responses["200"] = { ...responses["200"], links }
      operation["parameters"] = [...(operation["parameters"] ?? []), API_VERSION_PARAMETER]
      if (operation["requestBody"] !== undefined) {
        const body: JsonObject = allowAdditional(operation["requestBody"]) as JsonObject
        // A body that may be null may also be left out (DELETE /admin/users/{id}: an empty body reads as null).
        const optional = Object.values(body["content"] ?? {}).some((media: any) =>
          (media?.schema?.anyOf ?? []).some((member: JsonObject) => member["type"] === "null"))
        const examples = REQUEST_EXAMPLES[operation["operationId"]]
        const json: JsonObject | undefined = body["content"]?.["application/json"]
        if (examples !== undefined && json !== undefined) body["content"]["application/json"] = { ...json, examples }
        operation["requestBody"] = optional ? { ...body, required: false } : body
      }
    }
  })
  document["components"] = {
    ...document["components"],
    securitySchemes: { ...document["components"]?.["securitySchemes"], ...OWN_SECURITY_SCHEMES }
  }
  return pruneSchemas(document)
}
