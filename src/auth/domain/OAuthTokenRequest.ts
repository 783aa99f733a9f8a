import { goQueryUnescape } from "./OAuthRedirect.js"

/** A /oauth/token request as it came: the Authorization header, the Content-Type, the raw body and the query string. */
export interface OAuthTokenRequest {
  readonly authorization: string | undefined
  readonly contentType: string
  readonly body: string
  readonly query: string
}

export const TOKEN_FIELDS = ["grant_type", "code", "refresh_token", "redirect_uri", "client_id", "client_secret", "code_verifier", "resource"] as const

/** The token request's fields, each "" when absent. */
export type TokenFields = Record<(typeof TOKEN_FIELDS)[number], string>

/**
 * The body's fields: JSON when the Content-Type says so, else a form (with the query string, as Go's FormValue), or
 * why it cannot be read. In JSON, a field of `typed` that is not a string fails the body, as Go's decoder does with
 * the struct it decodes into; another field of the wrong type is skipped.
 */
export const readTokenBody = (
  request: OAuthTokenRequest,
  typed: ReadonlyArray<string> = TOKEN_FIELDS
): TokenFields | "bad_json" | "bad_form" => {
  const fields = Object.fromEntries(TOKEN_FIELDS.map((f) => [f, ""])) as TokenFields
  if (request.contentType.includes("application/json")) {
    let parsed: unknown
    try {
      parsed = request.body === "" ? undefined : JSON.parse(request.body)
    } catch {
      return "bad_json"
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return "bad_json"
    for (const field of TOKEN_FIELDS) {
      const value = (parsed as Record<string, unknown>)[field]
      if (value === undefined || value === null) continue
      if (typeof value !== "string") {
        if (typed.includes(field)) return "bad_json"
        continue
      }
      fields[field] = value
    }
    return fields
  }
  const form = request.contentType.includes("application/x-www-form-urlencoded") ? request.body : ""
  for (const source of [form, request.query]) {
    for (const part of source.split("&")) {
      if (part === "") continue
      const eq = part.indexOf("=")
      const key = goQueryUnescape(eq < 0 ? part : part.slice(0, eq))
      const value = goQueryUnescape(eq < 0 ? "" : part.slice(eq + 1))
      if (key === undefined || value === undefined) return "bad_form"
      // GoTrue reads `resource` from a JSON body only.
      if (key !== "resource" && (TOKEN_FIELDS as ReadonlyArray<string>).includes(key) && fields[key as keyof TokenFields] === "") {
        fields[key as keyof TokenFields] = value
      }
    }
  }
  return fields
}
