-- RATE_LIMIT_EMAIL_SENT / RATE_LIMIT_SMS_SENT: how many mails and texts went out in the current fixed window, one
-- row per channel. GoTrue counts in process memory, so N instances allow N times the quota; here every instance
-- claims from this row with one conditional upsert, and the row of an ended window is simply started over.

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}send_quotas (
  channel text PRIMARY KEY CHECK (channel IN ('email', 'sms')),
  window_start timestamptz NOT NULL,
  sent integer NOT NULL CHECK (sent >= 0)
);
