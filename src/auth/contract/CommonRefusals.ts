import * as Schema from "effect/Schema"
import { AuthErrors } from "../http/AuthErrors.js"

/*
 * What the flows that send mail or texts can answer besides their own errors: the send quotas and windows, the
 * per-recipient limits (RATE_LIMIT_EMAIL_PER_RECIPIENT / RATE_LIMIT_SMS_PER_RECIPIENT, only when set), and a text
 * that could not go out.
 */
export const SendsMail = AuthErrors.refused(429, ["over_email_send_rate_limit", "over_email_recipient_rate_limit"])
export const SendsText = Schema.Union(
  AuthErrors.refused(429, ["over_sms_send_rate_limit", "over_sms_recipient_rate_limit"]),
  AuthErrors.refused(422, ["sms_send_failed"])
)
/** The per-IP request limits (RATE_LIMIT_*, with RATE_LIMIT_HEADER). */
export const RateLimited = AuthErrors.refused(429, ["over_request_rate_limit"])
