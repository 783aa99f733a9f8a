import { createHash, createHmac } from "node:crypto"
import { encodeSignedRefreshToken, hasSignedTokenShape } from "../domain/GoTrueSignedRefreshToken.js"

/**
 * Refresh tokens are derived, not stored, and the database keeps only their SHA-256 digests: a database leak yields
 * no usable token, yet the server can still hand the session's current token out again when the reuse rule says so.
 *
 * A token is written in GoTrue's signed form (GoTrue's "v2" refresh tokens: the session's id, a counter, an
 * HMAC-SHA256 signature; see GoTrueSignedRefreshToken), with the token row's id as the counter and a key of the
 * session's own derived from the server secret (never stored). The form is GoTrue's so that the way back works: the
 * `export-sessions` command writes each live session's key and current counter into GoTrue's columns
 * (sessions.refresh_token_hmac_key, refresh_token_counter), and GoTrue then exchanges the tokens apps hold. Until then
 * the database holds no key.
 *
 * Before this form, Gatehouse's tokens were 43 characters, HMAC(key, "<session id>.<row id>"); rows issued then still
 * exchange, and their child is of the new form.
 */
export const refreshTokenKey = (secret: string): Buffer =>
  createHmac("sha256", secret).update("gatehouse/refresh-token/v1").digest()

/** The session's signing key, derived: the same for every instance, and stored nowhere until export-sessions. */
export const sessionSigningKey = (key: Buffer, sessionId: string): Buffer =>
  createHmac("sha256", key).update(`gotrue-signed/${sessionId}`).digest()

export const deriveRefreshToken = (key: Buffer, sessionId: string, rowId: string): string =>
  encodeSignedRefreshToken(sessionSigningKey(key, sessionId), sessionId, BigInt(rowId))

/** A token of the first form (43 characters), for rows issued before the signed form. */
export const deriveFirstFormRefreshToken = (key: Buffer, sessionId: string, rowId: string): string =>
  createHmac("sha256", key).update(`${sessionId}.${rowId}`).digest("base64url")

export const digestRefreshToken = (token: string): string => createHash("sha256").update(token).digest("hex")

/**
 * The token a Gatehouse row stands for, whichever form it was issued in: the row holds only the digest, so the form
 * is the one whose digest matches (the signed form first: every row issued since).
 */
export const tokenOfRow = (key: Buffer, sessionId: string, row: { readonly id: string; readonly token: string }): string => {
  const signed = deriveRefreshToken(key, sessionId, row.id)
  if (digestRefreshToken(signed) === row.token) return signed
  const first = deriveFirstFormRefreshToken(key, sessionId, row.id)
  return digestRefreshToken(first) === row.token ? first : signed
}

const GOTRUE_LEGACY = /^[a-z0-9]{12}$/

/**
 * GoTrue's classic refresh tokens: 12 random characters, stored as they are in refresh_tokens.token. A database
 * adopted from GoTrue holds them for every session GoTrue started; Gatehouse's own rows hold 64-hex digests, so the
 * two never collide, and a digest can never be presented as a legacy token (wrong length).
 */
export const isGoTrueLegacyToken = (token: string): boolean => GOTRUE_LEGACY.test(token)

/**
 * Shape check before any lookup: Gatehouse's tokens and GoTrue's signed ones (51 to 63 characters), GoTrue's
 * 12-character legacy tokens, and Gatehouse's first form (43).
 */
export const isWellFormedRefreshToken = (token: string): boolean =>
  hasSignedTokenShape(token) || isGoTrueLegacyToken(token) || /^[A-Za-z0-9_-]{43}$/.test(token)

/** Whether refresh_tokens.token holds a digest (Gatehouse's rows) rather than a GoTrue legacy token. */
export const isDigestRow = (stored: string): boolean => /^[0-9a-f]{64}$/.test(stored)

/** What refresh_tokens.token holds for a presented token: its digest, or a GoTrue legacy token itself. */
export const refreshTokenLookupKey = (token: string): string => (isGoTrueLegacyToken(token) ? token : digestRefreshToken(token))

/**
 * Whether a row holds the digest of a signed-form token Gatehouse derived for it (key, session, row id): such a token
 * proves by itself, when presented, that Gatehouse issued it for that session, so its row may go once no exchange
 * could forgive it (housekeeping). First-form rows, GoTrue's legacy rows and anything else do not.
 */
export const isSignedFormRow = (key: Buffer, row: { readonly id: string; readonly session_id: string; readonly token: string }): boolean =>
  digestRefreshToken(deriveRefreshToken(key, row.session_id, row.id)) === row.token
