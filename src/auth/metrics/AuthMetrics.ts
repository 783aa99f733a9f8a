import * as Metric from "effect/Metric"

/**
 * The auth server's own counters, as Effect metrics: the code that knows an event happened counts it, and the
 * metrics exporter (Telemetry, when METRICS_ENABLED) reads them all from Effect's registry. Counting costs an
 * increment whether or not anything exports them. Names follow OpenTelemetry's style; the Prometheus exporter
 * turns the dots into underscores and adds `_total`.
 */
export const AuthMetrics = {
  /**
   * Sessions issued or refreshed, tagged `grant_type`: POST /token's grant, or `verify` (a session /verify started,
   * from a typed code or a link) or `callback` (one an external provider's callback started, outside PKCE).
   */
  signIns: Metric.counter("auth.sign_ins", {
    description: "Sessions issued or refreshed by POST /token (by grant type), /verify and the OAuth callback",
    incremental: true
  }),
  /** Users created by POST /signup (anonymous ones included), tagged `provider` (email, phone, anonymous). */
  signUps: Metric.counter("auth.sign_ups", { description: "Users created by sign-up, by provider", incremental: true }),
  /** Reuse of a revoked refresh token outside the reuse interval: the session's tokens were revoked. */
  refreshTokenReuse: Metric.counter("auth.refresh_token_reuse_detections", {
    description: "Refresh tokens reused after revocation (the session was revoked)",
    incremental: true
  }),
  /** Messages handed to the mail server or SMS provider, tagged `channel` (email, sms, whatsapp). */
  messagesSent: Metric.counter("auth.messages_sent", { description: "Emails, texts and WhatsApp messages sent, by channel", incremental: true }),
  /**
   * Requests refused with 429 by a per-IP, per-instance or per-recipient limit, tagged `limit`: the setting's name
   * after RATE_LIMIT_ (otp, anonymous_users, token_refresh, verify, email_sent, sms_sent, email_per_recipient,
   * sms_per_recipient).
   */
  rateLimited: Metric.counter("auth.rate_limited_requests", { description: "Requests refused by a rate limit, by limit", incremental: true }),
  /** Requests refused because their captcha token did not verify (missing, invalid or the provider failed). */
  captchaRejected: Metric.counter("auth.captcha_rejected_requests", {
    description: "Requests refused by the captcha check",
    incremental: true
  })
} as const

// The tagged counters made so far, per counter, tag key and value: Metric.tagged builds a new metric key (and its
// hash) on every call, which the hot grants (a refresh, a sign-in) paid on every request. Tag values come from a
// short fixed list (grant types, providers, limits, channels), so this stays small.
const tagged = new WeakMap<Metric.Metric.Counter<number>, Map<string, Metric.Metric.Counter<number>>>()

const taggedCounter = (counter: Metric.Metric.Counter<number>, key: string, value: string): Metric.Metric.Counter<number> => {
  let byTag = tagged.get(counter)
  if (byTag === undefined) tagged.set(counter, byTag = new Map())
  const id = `${key}\u0000${value}`
  let metric = byTag.get(id)
  if (metric === undefined) {
    metric = Metric.tagged(counter, key, value)
    // A bound, should a caller ever tag with unbounded values: past it, tagged per call as before.
    if (byTag.size < 256) byTag.set(id, metric)
  }
  return metric
}

/** Counts one event on `counter` with one tag, e.g. `countTagged(AuthMetrics.signIns, "grant_type", "password")`. */
export const countTagged = (counter: Metric.Metric.Counter<number>, key: string, value: string) =>
  Metric.increment(taggedCounter(counter, key, value))
