import { createHmac, timingSafeEqual } from "node:crypto"

/*
 * The admin console's session (issue 31): a cookie any instance can check on its own, since instances keep no state.
 * It says who signed in (the admin key's role, and the session the key was bound to, if any) and until when, signed
 * with a key derived from the JWT secret. It never holds the key the operator pasted: a stolen cookie is worth at
 * most its own short life, and rotating JWT_SECRET ends every console session at once.
 */

/** The two keys of the console, each its own HMAC of the JWT secret, so neither can stand in for the other. */
export interface ConsoleKeys {
  readonly session: Buffer
  readonly csrf: Buffer
}

export const consoleKeys = (jwtSecret: string): ConsoleKeys => ({
  session: createHmac("sha256", jwtSecret).update("gatehouse admin console: session cookie v1").digest(),
  csrf: createHmac("sha256", jwtSecret).update("gatehouse admin console: form token v1").digest()
})

/** What a console session cookie says. Times are whole seconds since the epoch. */
export interface ConsoleSession {
  /** The admin key's `role` claim: the audit log's actor, as for the admin API. */
  readonly role: string
  /** The key's `sub` and `session_id` when it named a session: the console lasts only while that session does. */
  readonly boundTo?: { readonly userId: string; readonly sessionId: string } | undefined
  readonly issuedAt: number
  readonly expiresAt: number
  /** Random, so two sign-ins in one second have two sessions (and two form tokens). */
  readonly nonce: string
}

const VERSION = "v1"
const NONCE = /^[A-Za-z0-9_-]{16,64}$/
const ROLE = /^[\x21-\x7e]{1,64}$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const mac = (key: Buffer, text: string): Buffer => createHmac("sha256", key).update(text).digest()

const sameBytes = (a: Buffer, b: Buffer): boolean => a.length === b.length && timingSafeEqual(a, b)

/** The session's life: the console's own, cut short by the admin key's expiry when that comes first. */
export const sessionExpiry = (nowSeconds: number, lifetimeSeconds: number, keyExpiresAt: number | undefined): number =>
  keyExpiresAt === undefined ? nowSeconds + lifetimeSeconds : Math.min(nowSeconds + lifetimeSeconds, keyExpiresAt)

/** The cookie value: `v1.<claims, base64url JSON>.<HMAC-SHA256, base64url>`; only cookie-safe characters. */
export const sealSession = (keys: ConsoleKeys, session: ConsoleSession): string => {
  const claims = Buffer.from(JSON.stringify({
    r: session.role,
    ...(session.boundTo === undefined ? {} : { u: session.boundTo.userId, s: session.boundTo.sessionId }),
    i: session.issuedAt,
    e: session.expiresAt,
    n: session.nonce
  })).toString("base64url")
  const signed = `${VERSION}.${claims}`
  return `${signed}.${mac(keys.session, signed).toString("base64url")}`
}

const isWhole = (value: unknown): value is number => typeof value === "number" && Number.isSafeInteger(value)

/**
 * The session a cookie value holds, when this server signed it and it has not expired; undefined for anything else
 * (no value, another shape, a changed byte, a signature of another key, an expired or future-dated session).
 */
export const openSession = (keys: ConsoleKeys, value: string | undefined, nowSeconds: number): ConsoleSession | undefined => {
  if (value === undefined || value.length > 1024) return undefined
  const parts = value.split(".")
  if (parts.length !== 3 || parts[0] !== VERSION) return undefined
  const [, claims, signature] = parts as [string, string, string]
  // The texts, not the decoded bytes: base64url decoding forgives stray characters and spare bits.
  if (!sameBytes(Buffer.from(signature), Buffer.from(mac(keys.session, `${VERSION}.${claims}`).toString("base64url")))) return undefined
  let parsed: Record<string, unknown>
  try {
    const json: unknown = JSON.parse(Buffer.from(claims, "base64url").toString("utf8"))
    if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined
    parsed = json as Record<string, unknown>
  } catch {
    return undefined
  }
  const { r: role, u: userId, s: sessionId, i: issuedAt, e: expiresAt, n: nonce } = parsed
  if (typeof role !== "string" || !ROLE.test(role) || typeof nonce !== "string" || !NONCE.test(nonce)) return undefined
  if (!isWhole(issuedAt) || !isWhole(expiresAt) || issuedAt > nowSeconds + 60 || expiresAt <= nowSeconds) return undefined
  const bound = userId === undefined && sessionId === undefined
    ? undefined
    : typeof userId === "string" && UUID.test(userId) && typeof sessionId === "string" && UUID.test(sessionId)
    ? { userId, sessionId }
    : null
  if (bound === null) return undefined
  return { role, boundTo: bound, issuedAt, expiresAt, nonce }
}

/** The form token of a session: an HMAC of its cookie under the CSRF key, which a page on another site cannot read. */
export const formToken = (keys: ConsoleKeys, cookieValue: string): string => mac(keys.csrf, cookieValue).toString("base64url")

/** Whether a submitted form token is the session's own, compared in constant time. */
export const formTokenMatches = (keys: ConsoleKeys, cookieValue: string, submitted: string | undefined): boolean =>
  submitted !== undefined && sameBytes(Buffer.from(submitted), Buffer.from(formToken(keys, cookieValue)))
