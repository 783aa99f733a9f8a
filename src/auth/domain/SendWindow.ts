import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import { AuthError } from "./AuthError.js"

/**
 * SMTP_MAX_FREQUENCY / SMS_MAX_FREQUENCY: whole seconds still to wait before another message may go to the same
 * recipient, or None when one may be sent now.
 */
export const resendWait = (sentAt: Date | null, window: Duration.Duration, now: Date): Option.Option<number> => {
  if (sentAt === null) return Option.none()
  const remaining = Duration.toMillis(window) - (now.getTime() - sentAt.getTime())
  return remaining > 0 ? Option.some(Math.ceil(remaining / 1000)) : Option.none()
}

export const tooSoon = (channel: "email" | "sms", seconds: number): AuthError =>
  AuthError.of(429, channel === "email" ? "over_email_send_rate_limit" : "over_sms_send_rate_limit",
    `For security purposes, you can only request this after ${seconds} seconds.`).withRetryAfter(seconds)
