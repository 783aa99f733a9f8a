import { createHash, createHmac, timingSafeEqual } from "node:crypto"

/**
 * GoTrue's signed refresh tokens ("algorithm v2", GoTrue v2.196): no row stands behind them. The token names its
 * session and a counter, and is signed with a key kept on the session row (sessions.refresh_token_hmac_key), which
 * also counts the tokens issued (refresh_token_counter). Its bytes, base64url without padding:
 *
 *   [version 0][session id, 16 bytes][counter, unsigned varint][HMAC-SHA256(key, the bytes before), first 16 bytes]
 *   [SHA-256(all the bytes before), first 4 bytes]
 *
 * The checksum lets a mistyped or made-up string be refused before any lookup; only the signature, checked against
 * the session's key, says the token is genuine.
 */
export interface GoTrueSignedRefreshToken {
  readonly sessionId: string
  /** GoTrue clamps a varint beyond a signed 64-bit integer to its largest value; so does this. */
  readonly counter: bigint
  /** The bytes the signature covers (version, session, counter), as presented. */
  readonly signed: Buffer
  readonly signature: Buffer
}

const SESSION_BYTES = 16
const SIGNATURE_BYTES = 16
const CHECKSUM_BYTES = 4
const MAX_VARINT_BYTES = 10
const MAX_COUNTER = 2n ** 63n - 1n
const MIN_BYTES = 1 + SESSION_BYTES + 1 + SIGNATURE_BYTES + CHECKSUM_BYTES
const MAX_BYTES = 1 + SESSION_BYTES + MAX_VARINT_BYTES + SIGNATURE_BYTES + CHECKSUM_BYTES

/** The shortest and longest base64url (unpadded) text of 38 to 47 bytes. */
const MIN_CHARS = Math.ceil((MIN_BYTES * 4) / 3)
const MAX_CHARS = Math.ceil((MAX_BYTES * 4) / 3)
const BASE64URL = /^[A-Za-z0-9_-]+$/

/**
 * Whether the text could be a signed token at all: 51 to 63 base64url characters, and not a length base64 cannot
 * have (4n + 1). Gatehouse's own tokens (43 characters) and GoTrue's classic ones (12) are never this shape, and
 * are told apart by length before any pattern runs.
 */
export const hasSignedTokenShape = (token: string): boolean =>
  token.length >= MIN_CHARS && token.length <= MAX_CHARS && token.length % 4 !== 1 && BASE64URL.test(token)

/**
 * Decodes base64url without padding, only in its one canonical spelling. Go's decoder also takes other spellings of
 * the last character (unused low bits set); GoTrue never writes those, and refusing them keeps one text per token.
 */
const decodeBase64Url = (text: string): Buffer | undefined => {
  if (text.length % 4 === 1 || !BASE64URL.test(text)) return undefined
  const bytes = Buffer.from(text, "base64url")
  return bytes.toString("base64url") === text ? bytes : undefined
}

/** An unsigned varint as Go's binary.Uvarint reads one: at most 10 bytes, the 10th at most 1, else no number. */
const readUvarint = (bytes: Buffer, from: number): { readonly value: bigint; readonly length: number } | undefined => {
  let value = 0n
  for (let i = 0; i < MAX_VARINT_BYTES && from + i < bytes.length; i++) {
    const byte = bytes[from + i]!
    if (byte < 0x80) {
      if (i === MAX_VARINT_BYTES - 1 && byte > 1) return undefined
      return { value: value | (BigInt(byte) << BigInt(7 * i)), length: i + 1 }
    }
    value |= BigInt(byte & 0x7f) << BigInt(7 * i)
  }
  return undefined
}

const writeUvarint = (value: bigint): Buffer => {
  const out: Array<number> = []
  let rest = value
  while (rest >= 0x80n) {
    out.push(Number(rest & 0x7fn) | 0x80)
    rest >>= 7n
  }
  out.push(Number(rest))
  return Buffer.from(out)
}

const uuidOf = (bytes: Buffer): string => {
  const hex = bytes.toString("hex")
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

const checksumOf = (bytes: Buffer): Buffer => createHash("sha256").update(bytes).digest().subarray(0, CHECKSUM_BYTES)
const signatureOf = (key: Buffer, signed: Buffer): Buffer =>
  createHmac("sha256", key).update(signed).digest().subarray(0, SIGNATURE_BYTES)

/**
 * Reads a signed token as GoTrue's parser does (length, version, checksum, counter, then exactly 16 signature
 * bytes), without checking the signature; undefined for anything else. The checksum is compared in constant time
 * too, as GoTrue does, though it guards nothing secret.
 */
export const parseSignedRefreshToken = (token: string): GoTrueSignedRefreshToken | undefined => {
  if (!hasSignedTokenShape(token)) return undefined
  const bytes = decodeBase64Url(token)
  if (bytes === undefined || bytes.length < MIN_BYTES || bytes.length > MAX_BYTES || bytes[0] !== 0) return undefined
  const body = bytes.subarray(0, bytes.length - CHECKSUM_BYTES)
  if (!timingSafeEqual(checksumOf(body), bytes.subarray(body.length))) return undefined
  const counter = readUvarint(body, 1 + SESSION_BYTES)
  if (counter === undefined) return undefined
  const signedLength = 1 + SESSION_BYTES + counter.length
  if (body.length - signedLength !== SIGNATURE_BYTES) return undefined
  return {
    sessionId: uuidOf(body.subarray(1, 1 + SESSION_BYTES)),
    counter: counter.value > MAX_COUNTER ? MAX_COUNTER : counter.value,
    signed: body.subarray(0, signedLength),
    signature: body.subarray(signedLength)
  }
}

/** Whether the session's key signed the token (a constant-time comparison). */
export const isSignedWith = (token: GoTrueSignedRefreshToken, key: Buffer): boolean =>
  timingSafeEqual(signatureOf(key, token.signed), token.signature)

/**
 * The token GoTrue would issue for the session at this counter (0 to 2^63 − 1), so that Gatehouse can hand one out
 * again where GoTrue's rules say so.
 */
export const encodeSignedRefreshToken = (key: Buffer, sessionId: string, counter: bigint): string => {
  const signed = Buffer.concat([Buffer.of(0), Buffer.from(sessionId.replaceAll("-", ""), "hex"), writeUvarint(counter)])
  const body = Buffer.concat([signed, signatureOf(key, signed)])
  return Buffer.concat([body, checksumOf(body)]).toString("base64url")
}

/**
 * The session's signing key from sessions.refresh_token_hmac_key: base64url without padding, as GoTrue writes it.
 * With GoTrue's database encryption on, the column holds an encrypted JSON envelope instead, sealed with keys only
 * GoTrue's configuration has. Gatehouse cannot open it: undefined, and the session's tokens are refused as unknown
 * tokens are (400 refresh_token_not_found), the answer GoTrue gives for a session without a key. Such sessions sign
 * in again; their users are not otherwise affected.
 */
export const signingKeyOf = (stored: string | null): Buffer | undefined => {
  if (stored === null || stored === "") return undefined
  return decodeBase64Url(stored)
}
