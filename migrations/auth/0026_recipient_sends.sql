-- RATE_LIMIT_EMAIL_PER_RECIPIENT / RATE_LIMIT_SMS_PER_RECIPIENT: the times of the messages sent to one recipient
-- within the last window (milliseconds since the epoch; at most the limit of them), so that any number of instances
-- allow one address or phone number at most that many in any window, claimed by one conditional upsert on its row
-- (see src/auth/domain/RecipientSendWindow.ts). GoTrue has no such limit.
--
-- `recipient` is a keyed digest of the normalised address (HMAC-SHA256 under a key derived from the server's
-- secret), never the address itself. `expires_at` is when every time in `sent` has aged out: the row then decides
-- nothing and housekeeping deletes it.
--
-- UNLOGGED, as rate_limits: the rows are worth nothing after a crash (an emptied table only means fresh windows),
-- so they are kept out of the WAL.

CREATE UNLOGGED TABLE IF NOT EXISTS {{schema}}.{{prefix}}recipient_sends (
  channel text NOT NULL CHECK (channel IN ('email', 'sms')),
  recipient text NOT NULL,
  sent bigint[] NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (channel, recipient)
);

CREATE INDEX IF NOT EXISTS {{prefix}}recipient_sends_expires_at_idx ON {{schema}}.{{prefix}}recipient_sends (expires_at);
