import { isGoRequestUri, isHttpsOrLoopbackUri, redirectUriProblem } from "./OAuthRedirectUri.js"

/** GoTrue's token endpoint auth methods, in the order its messages list them. */
export const AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"] as const
export type TokenEndpointAuthMethod = (typeof AUTH_METHODS)[number]
export type ClientType = "public" | "confidential"
export const GRANT_TYPES = ["authorization_code", "refresh_token"] as const

/** Go's `%v` of a string slice. */
const goList = (items: ReadonlyArray<string>): string => `[${items.join(" ")}]`

/** A registration body as GoTrue's decoder leaves it: absent or null fields are their zero values. */
export interface RegisterParams {
  readonly redirectUris: ReadonlyArray<string>
  readonly clientType: string
  readonly tokenEndpointAuthMethod: string
  readonly grantTypes: ReadonlyArray<string>
  readonly clientName: string
  readonly clientUri: string
  readonly logoUri: string
}

/** An update body, and what the repo changes: a field left out (or null in the body) is not updated. */
export interface OAuthClientChanges {
  readonly redirectUris?: ReadonlyArray<string>
  readonly grantTypes?: ReadonlyArray<string>
  readonly clientName?: string
  readonly clientUri?: string
  readonly logoUri?: string
  readonly tokenEndpointAuthMethod?: string
}

const isObject = (body: unknown): body is Record<string, unknown> => typeof body === "object" && body !== null && !Array.isArray(body)

type Field<A> = { readonly ok: true; readonly value: A | undefined } | { readonly ok: false }

// A NUL character cannot be stored in a PostgreSQL text column: such a string is refused with the body, not a 500.
const isText = (value: unknown): value is string => typeof value === "string" && !value.includes("\u0000")

const stringField = (body: Record<string, unknown>, key: string): Field<string> => {
  const value = body[key]
  if (value === undefined || value === null) return { ok: true, value: undefined }
  return isText(value) ? { ok: true, value } : { ok: false }
}

const listField = (body: Record<string, unknown>, key: string): Field<ReadonlyArray<string>> => {
  const value = body[key]
  if (value === undefined || value === null) return { ok: true, value: undefined }
  return Array.isArray(value) && value.every(isText) ? { ok: true, value } : { ok: false }
}

/**
 * A registration body, or undefined where GoTrue's JSON decoder fails (400 bad_json "Invalid JSON body"): not an
 * object, or a known field of the wrong type.
 */
export const readRegisterBody = (body: unknown): RegisterParams | undefined => {
  if (!isObject(body)) return undefined
  const fields = {
    redirectUris: listField(body, "redirect_uris"),
    clientType: stringField(body, "client_type"),
    tokenEndpointAuthMethod: stringField(body, "token_endpoint_auth_method"),
    grantTypes: listField(body, "grant_types"),
    clientName: stringField(body, "client_name"),
    clientUri: stringField(body, "client_uri"),
    logoUri: stringField(body, "logo_uri")
  }
  if (Object.values(fields).some((field) => !field.ok)) return undefined
  const get = <A>(field: Field<A>, zero: A): A => (field.ok && field.value !== undefined ? field.value : zero)
  return {
    redirectUris: get(fields.redirectUris, []),
    clientType: get(fields.clientType, ""),
    tokenEndpointAuthMethod: get(fields.tokenEndpointAuthMethod, ""),
    grantTypes: get(fields.grantTypes, []),
    clientName: get(fields.clientName, ""),
    clientUri: get(fields.clientUri, ""),
    logoUri: get(fields.logoUri, "")
  }
}

/** An update body, or undefined where GoTrue's decoder fails. */
export const readUpdateBody = (body: unknown): OAuthClientChanges | undefined => {
  if (!isObject(body)) return undefined
  const fields = {
    redirectUris: listField(body, "redirect_uris"),
    grantTypes: listField(body, "grant_types"),
    clientName: stringField(body, "client_name"),
    clientUri: stringField(body, "client_uri"),
    logoUri: stringField(body, "logo_uri"),
    tokenEndpointAuthMethod: stringField(body, "token_endpoint_auth_method")
  }
  const out: Record<string, unknown> = {}
  for (const [key, field] of Object.entries(fields)) {
    if (!field.ok) return undefined
    if (field.value !== undefined) out[key] = field.value
  }
  return out as OAuthClientChanges
}

const redirectUrisProblem = (uris: ReadonlyArray<string>, required: boolean): string | undefined => {
  if (required && uris.length === 0) return "redirect_uris is required"
  if (uris.length === 0) return "redirect_uris cannot be empty"
  if (uris.length > 10) return "redirect_uris cannot exceed 10 items"
  for (const uri of uris) {
    const problem = redirectUriProblem(uri)
    if (problem !== undefined) return `invalid redirect_uri '${uri}': ${problem}`
  }
  return undefined
}

const grantTypesProblem = (grantTypes: ReadonlyArray<string>): string | undefined => {
  if (grantTypes.length === 0) return "grant_types cannot be empty"
  return grantTypes.every((g) => (GRANT_TYPES as ReadonlyArray<string>).includes(g))
    ? undefined
    : "grant_types must only contain 'authorization_code' and/or 'refresh_token'"
}

// Go's len() counts bytes.
const clientNameProblem = (name: string): string | undefined =>
  Buffer.byteLength(name) > 1024 ? "client_name cannot exceed 1024 characters" : undefined

/**
 * A client's home page and logo are shown to the user on the consent page. GoTrue takes any URL Go parses, so
 * `javascript:` and `data:` links reach that page; Gatehouse is stricter and takes https, or http on a loopback host.
 */
const uriProblem = (field: "client_uri" | "logo_uri", uri: string): string | undefined => {
  if (uri === "") return undefined
  if (Buffer.byteLength(uri) > 2048) return `${field} cannot exceed 2048 characters`
  if (!isGoRequestUri(uri)) return `${field} must be a valid URL`
  return isHttpsOrLoopbackUri(uri) ? undefined : `${field} must be an https URL (http only on localhost)`
}

/** The client type a method implies: `none` is a public client's, the others a confidential one's. */
export const clientTypeOfMethod = (method: string): ClientType => (method === "none" ? "public" : "confidential")

export const methodsOfClientType = (clientType: string): ReadonlyArray<string> =>
  clientType === "public" ? ["none"] : clientType === "confidential" ? ["client_secret_basic", "client_secret_post"] : []

/**
 * Why a registration is refused (GoTrue's params.validate, in its order), or undefined. GoTrue's create handlers
 * wrap the message once more, so the client sees it behind a `400: ` prefix; `registerRefusal` adds it.
 */
export const registerProblem = (p: RegisterParams): string | undefined => {
  const problem = redirectUrisProblem(p.redirectUris, true) ??
    (p.grantTypes.length > 0 ? grantTypesProblem(p.grantTypes) : undefined) ??
    clientNameProblem(p.clientName) ??
    uriProblem("client_uri", p.clientUri) ??
    uriProblem("logo_uri", p.logoUri)
  if (problem !== undefined) return problem
  if (p.clientType !== "" && p.clientType !== "public" && p.clientType !== "confidential") return "client_type must be 'public' or 'confidential'"
  if (p.tokenEndpointAuthMethod !== "" && !(AUTH_METHODS as ReadonlyArray<string>).includes(p.tokenEndpointAuthMethod)) {
    return `token_endpoint_auth_method must be one of: ${goList(AUTH_METHODS)}`
  }
  if (p.clientType !== "" && p.tokenEndpointAuthMethod !== "") {
    const expected = clientTypeOfMethod(p.tokenEndpointAuthMethod)
    if (p.clientType !== expected) {
      return `client_type '${p.clientType}' is inconsistent with token_endpoint_auth_method '${p.tokenEndpointAuthMethod}' (expected client_type '${expected}')`
    }
  }
  return undefined
}

/** The message a refused registration answers with: GoTrue's error text wrapped in its status. */
export const registerRefusal = (problem: string): string => `400: ${problem}`

/** What a valid registration makes: the type (explicit, else from the method, else confidential), method, grants. */
export const decideRegistration = (p: RegisterParams): {
  readonly clientType: ClientType
  readonly method: TokenEndpointAuthMethod
  readonly grantTypes: ReadonlyArray<string>
} => {
  const clientType: ClientType = p.clientType === "public" || p.clientType === "confidential"
    ? p.clientType
    : p.tokenEndpointAuthMethod !== "" ? clientTypeOfMethod(p.tokenEndpointAuthMethod) : "confidential"
  const method = (p.tokenEndpointAuthMethod !== ""
    ? p.tokenEndpointAuthMethod
    : clientType === "public" ? "none" : "client_secret_basic") as TokenEndpointAuthMethod
  return { clientType, method, grantTypes: p.grantTypes.length > 0 ? p.grantTypes : GRANT_TYPES }
}

/** Why an update is refused (GoTrue's updateOAuthServerClient, no prefix), or undefined. */
export const updateProblem = (p: OAuthClientChanges, clientType: string): string | undefined => {
  if (Object.keys(p).length === 0) return "No fields provided for update"
  const problem = (p.redirectUris === undefined ? undefined : redirectUrisProblem(p.redirectUris, false)) ??
    (p.grantTypes === undefined ? undefined : grantTypesProblem(p.grantTypes)) ??
    (p.clientName === undefined ? undefined : clientNameProblem(p.clientName)) ??
    (p.clientUri === undefined ? undefined : uriProblem("client_uri", p.clientUri)) ??
    (p.logoUri === undefined ? undefined : uriProblem("logo_uri", p.logoUri))
  if (problem !== undefined) return problem
  const method = p.tokenEndpointAuthMethod
  if (method === undefined) return undefined
  if (!(AUTH_METHODS as ReadonlyArray<string>).includes(method)) {
    return `invalid token_endpoint_auth_method: must be one of ${goList(AUTH_METHODS)}`
  }
  const valid = methodsOfClientType(clientType)
  return valid.includes(method)
    ? undefined
    : `token_endpoint_auth_method '${method}' is not valid for client_type '${clientType}'; valid methods: ${goList(valid)}`
}
