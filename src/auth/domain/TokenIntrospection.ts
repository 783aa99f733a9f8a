import { goQueryUnescape } from "./OAuthRedirect.js"

/**
 * RFC 7662 token introspection's rules (POST /oauth/introspect): reading the request's fields, and what an answer
 * says of a token. Only access tokens of live sessions are active; everything else, refresh tokens included, is
 * `{"active": false}` and nothing more, so an answer never tells an unknown token from a revoked or malformed one.
 */

export interface IntrospectionFields {
  readonly token: string
  readonly token_type_hint: string
}

/**
 * The request's token and hint ("" when absent): from a form body (RFC 7662 §2.1), or a JSON object as the token
 * endpoint also reads. Undefined for a body that cannot be read. The first value of a field counts, as Go's FormValue.
 */
export const readIntrospectionBody = (contentType: string, body: string): IntrospectionFields | undefined => {
  const fields = { token: "", token_type_hint: "" }
  if (/^application\/json\s*(;|$)/i.test(contentType)) {
    let parsed: unknown
    try {
      parsed = body === "" ? {} : JSON.parse(body)
    } catch {
      return undefined
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined
    for (const key of ["token", "token_type_hint"] as const) {
      const value = (parsed as Record<string, unknown>)[key]
      if (value === undefined || value === null) continue
      if (typeof value !== "string") return undefined
      fields[key] = value
    }
    return fields
  }
  if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(contentType)) return body === "" ? fields : undefined
  for (const part of body.split("&")) {
    if (part === "") continue
    const eq = part.indexOf("=")
    const key = goQueryUnescape(eq < 0 ? part : part.slice(0, eq))
    const value = goQueryUnescape(eq < 0 ? "" : part.slice(eq + 1))
    if (key === undefined || value === undefined) return undefined
    if ((key === "token" || key === "token_type_hint") && fields[key] === "") fields[key] = value
  }
  return fields
}

/** The answer for every token that is not an active access token. */
export const INACTIVE = { active: false } as const

export interface ActiveAccessToken {
  readonly active: true
  readonly token_type: "access_token"
  readonly sub: string
  readonly exp: number
  readonly iat?: number
  readonly iss?: string
  readonly aud?: string | ReadonlyArray<string>
  readonly scope?: string
  readonly client_id?: string
  readonly session_id: string
  readonly aal?: string
  readonly role?: string
  readonly username?: string
}

export type IntrospectionAnswer = typeof INACTIVE | ActiveAccessToken

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const NIL_UUID = "00000000-0000-0000-0000-000000000000"

/**
 * The session an access token's verified claims name (its user and session ids), or undefined when the claims are
 * not an access token's: no user, no session (an API key such as anon or service_role names neither, and never ends),
 * or no expiry (every access token this server issues has one; without it there would be nothing to answer for exp).
 */
export const accessTokenSession = (claims: Readonly<Record<string, unknown>>): { readonly userId: string; readonly sessionId: string } | undefined => {
  const sub = claims["sub"]
  const session = claims["session_id"]
  if (typeof sub !== "string" || !UUID.test(sub)) return undefined
  if (typeof session !== "string" || !UUID.test(session) || session === NIL_UUID) return undefined
  if (typeof claims["exp"] !== "number") return undefined
  return { userId: sub.toLowerCase(), sessionId: session.toLowerCase() }
}

const text = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined)

/**
 * The active answer for the verified claims of an access token whose session lives: RFC 7662's members from the
 * claims, each only when the claim has the member's type, and `username` the user's address as it is now (the
 * token's may be older).
 */
export const activeAnswer = (
  claims: Readonly<Record<string, unknown>>,
  session: { readonly userId: string; readonly sessionId: string },
  email: string | null
): ActiveAccessToken => {
  const aud = claims["aud"]
  const iat = claims["iat"]
  const pick = <K extends string, V>(key: K, value: V | undefined) => (value === undefined ? {} : { [key]: value } as Record<K, V>)
  return {
    active: true,
    token_type: "access_token",
    sub: session.userId,
    exp: claims["exp"] as number,
    ...pick("iat", typeof iat === "number" ? iat : undefined),
    ...pick("iss", text(claims["iss"])),
    ...pick("aud", typeof aud === "string" ? text(aud) : Array.isArray(aud) && aud.every((a) => typeof a === "string") ? aud as ReadonlyArray<string> : undefined),
    ...pick("scope", text(claims["scope"])),
    ...pick("client_id", text(claims["client_id"])),
    session_id: session.sessionId,
    ...pick("aal", text(claims["aal"])),
    ...pick("role", text(claims["role"])),
    ...pick("username", email === null ? undefined : text(email))
  }
}
