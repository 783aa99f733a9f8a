import * as Duration from "effect/Duration"
import { AuthError } from "./AuthError.js"

/** The fixed window of RATE_LIMIT_EMAIL_SENT / RATE_LIMIT_SMS_SENT a moment falls in. */
export interface SendQuotaWindow {
  readonly start: Date
  /** Whole seconds until the next window opens (at least 1): the Retry-After of a refused message. */
  readonly secondsLeft: number
}

/**
 * Windows are aligned to the Unix epoch, so every instance computes the same window for the same moment from its
 * clock alone and the counter row they share needs no coordination beyond its own UPDATE. A period shorter than a
 * millisecond is treated as one, which keeps the rule total.
 */
export const sendQuotaWindow = (per: Duration.Duration, now: Date): SendQuotaWindow => {
  const period = Math.max(1, Math.floor(Duration.toMillis(per)))
  const at = now.getTime()
  const start = Math.floor(at / period) * period
  return { start: new Date(start), secondsLeft: Math.max(1, Math.ceil((start + period - at) / 1000)) }
}

/** A counter row of the quota table, as both the SQL and the in-memory repo keep it. */
export interface SendQuotaCount {
  readonly windowStart: Date
  readonly sent: number
}

/**
 * One more message in `windowStart`'s window, or None when `limit` messages already went out in it. A row from an
 * older window starts over; a row from a newer one (another instance's clock runs ahead) is counted against as
 * it is, so a lagging clock can never reopen a window. This is what the SQL upsert does in one statement.
 */
export const claimQuota = (
  row: SendQuotaCount | undefined,
  windowStart: Date,
  limit: number
): SendQuotaCount | undefined => {
  if (limit < 1) return undefined
  if (row === undefined || row.windowStart.getTime() < windowStart.getTime()) return { windowStart, sent: 1 }
  return row.sent < limit ? { windowStart: row.windowStart, sent: row.sent + 1 } : undefined
}

/** Takes back one claimed message, only while its window is still the row's: a new window owes nothing. */
export const giveBackQuota = (row: SendQuotaCount | undefined, windowStart: Date): SendQuotaCount | undefined =>
  row !== undefined && row.windowStart.getTime() === windowStart.getTime() && row.sent > 0
    ? { windowStart: row.windowStart, sent: row.sent - 1 }
    : row

/** GoTrue's answer when the instance-wide quota is spent, with the seconds until the next window. */
export const overSendQuota = (channel: "email" | "sms", retryAfter: number): AuthError =>
  channel === "email"
    ? AuthError.of(429, "over_email_send_rate_limit", "Email rate limit exceeded").withRetryAfter(retryAfter)
    : AuthError.of(429, "over_sms_send_rate_limit", "SMS rate limit exceeded").withRetryAfter(retryAfter)
