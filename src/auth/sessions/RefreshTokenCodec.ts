import { createHash, createHmac } from "node:crypto"
import { hasSignedTokenShape } from "../domain/GoTrueSignedRefreshToken.js"

/**
 * Refresh tokens are derived, not stored: token = HMAC(key, "<session id>.<row id>"), and the database keeps
 * only SHA-256 digests. A database leak therefore yields no usable token, yet the server can still hand the
 * session's current token out again when the spec's reuse rule says so.
 */
export const refreshTokenKey = (secret: string): Buffer =>
  createHmac("sha256", secret).update("gatehouse/refresh-token/v1").digest()

export const deriveRefreshToken = (key: Buffer, sessionId: string, rowId: string): string =>
  createHmac("sha256", key).update(`${sessionId}.${rowId}`).digest("base64url")

export const digestRefreshToken = (token: string): string => createHash("sha256").update(token).digest("hex")

const GOTRUE_LEGACY = /^[a-z0-9]{12}$/

/**
 * GoTrue's classic refresh tokens: 12 random characters, stored as they are in refresh_tokens.token. A database
 * adopted from GoTrue holds them for every session GoTrue started; Gatehouse's own rows hold 64-hex digests, so the
 * two never collide, and a digest can never be presented as a legacy token (wrong length).
 */
export const isGoTrueLegacyToken = (token: string): boolean => GOTRUE_LEGACY.test(token)

/**
 * Shape check before any lookup: what deriveRefreshToken produces, GoTrue's 12-character legacy tokens, and GoTrue's
 * signed tokens (51 to 63 characters). The exchange's hot path, Gatehouse's own token, is the first test.
 */
export const isWellFormedRefreshToken = (token: string): boolean =>
  /^[A-Za-z0-9_-]{43}$/.test(token) || isGoTrueLegacyToken(token) || hasSignedTokenShape(token)

/** What refresh_tokens.token holds for a presented token: its digest, or a GoTrue legacy token itself. */
export const refreshTokenLookupKey = (token: string): string => (isGoTrueLegacyToken(token) ? token : digestRefreshToken(token))
