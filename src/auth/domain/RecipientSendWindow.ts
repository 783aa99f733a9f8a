import { createHmac } from "node:crypto"
import { AuthError } from "./AuthError.js"

/**
 * RATE_LIMIT_EMAIL_PER_RECIPIENT / RATE_LIMIT_SMS_PER_RECIPIENT: at most `limit` messages to one address or phone
 * number in any `periodMs` (a sliding window). A fixed window, as the instance-wide quotas use, would let one
 * recipient be sent twice the limit across a window's edge; a token bucket lets through a burst and then a steady
 * trickle, more than "N per hour" says. Keeping the send times themselves makes the limit exactly what it reads as,
 * and tells a refused client exactly when the next slot frees.
 */
export interface RecipientLimit {
  readonly limit: number
  readonly periodMs: number
}

/** A send to one recipient: allowed, with the send times to keep, or refused until a slot frees. */
export type RecipientSend =
  | { readonly allowed: true; readonly sent: ReadonlyArray<number> }
  | { readonly allowed: false; readonly retryAfterMs: number }

/**
 * The sends that still count at `nowMs`, oldest first. A send time ahead of `nowMs` (another instance's clock runs
 * ahead) counts until its own window ends, so a lagging clock never reopens a slot early.
 */
export const liveSends = (sent: ReadonlyArray<number>, nowMs: number, periodMs: number): ReadonlyArray<number> =>
  sent.filter((at) => at > nowMs - periodMs).sort((a, b) => a - b)

/**
 * One more message to a recipient at `nowMs`, given the times of those already sent to it (the order does not
 * matter). Allowed while fewer than `limit` count; the kept times are the live ones and `nowMs`, so a row never grows
 * past `limit`. Refused: the wait until enough of the live sends age out that one more fits, always more than 0.
 * A limit under one refuses every message, for a whole period.
 */
export const admitRecipientSend = (sent: ReadonlyArray<number>, nowMs: number, rule: RecipientLimit): RecipientSend => {
  const limit = Math.floor(rule.limit)
  if (limit < 1) return { allowed: false, retryAfterMs: rule.periodMs }
  const live = liveSends(sent, nowMs, rule.periodMs)
  if (live.length < limit) return { allowed: true, sent: [...live, nowMs].sort((a, b) => a - b) }
  // Live sends are sorted: once the one `limit` from the newest ages out, limit - 1 remain.
  return { allowed: false, retryAfterMs: live[live.length - limit]! + rule.periodMs - nowMs }
}

/** Takes back the send made at `atMs` (one of them, if two shared the millisecond): it never went out. */
export const giveBackRecipientSend = (sent: ReadonlyArray<number>, atMs: number): ReadonlyArray<number> => {
  const index = sent.indexOf(atMs)
  return index < 0 ? sent : [...sent.slice(0, index), ...sent.slice(index + 1)]
}

/**
 * When a row's sends have all aged out: from then on it decides nothing that no row would not, so housekeeping may
 * delete it.
 */
export const recipientRowExpiry = (sent: ReadonlyArray<number>, periodMs: number): number =>
  sent.reduce((latest, at) => Math.max(latest, at), Number.NEGATIVE_INFINITY) + periodMs

/**
 * The address a message goes to, as the limit counts it: an email lower-cased and trimmed (mail servers do not tell
 * `Ann@x` from `ann@x`), a phone number by its digits alone (`+1 555` and `1555` reach one handset).
 */
export const normalisedRecipient = (channel: "email" | "sms", address: string): string =>
  channel === "email" ? address.trim().toLowerCase() : address.replace(/\D/g, "")

/** The key of recipientKey's digests, derived from the server's secret: the same on every instance, stored nowhere. */
export const recipientDigestKey = (secret: string): Buffer =>
  createHmac("sha256", secret).update("gatehouse/send-recipient/v1").digest()

/**
 * The key a recipient's row is stored under: a keyed digest (HMAC-SHA256 under recipientDigestKey) of its channel and
 * normalised address, so the table never holds an address, and a copy of it cannot be checked against a list of
 * addresses without the server's secret.
 */
export const recipientKey = (key: Buffer, channel: "email" | "sms", address: string): string =>
  createHmac("sha256", key).update(`${channel}:${normalisedRecipient(channel, address)}`).digest("base64url")

/**
 * The answer past a per-recipient limit: its own code, so that a client (and its operator) can tell it from the
 * instance-wide quota, and the whole seconds until the next slot frees.
 */
export const overRecipientLimit = (channel: "email" | "sms", retryAfterMs: number): AuthError =>
  channel === "email"
    ? AuthError.of(429, "over_email_recipient_rate_limit", "Email rate limit exceeded for this address").withRetryAfter(retryAfterMs / 1000)
    : AuthError.of(429, "over_sms_recipient_rate_limit", "SMS rate limit exceeded for this phone number").withRetryAfter(retryAfterMs / 1000)
