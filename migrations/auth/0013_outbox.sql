-- The embedded default's outbox: the last 100 mails and texts the development server kept instead of delivering
-- (no SMTP_HOST, no SMS provider), so they survive a restart. Each keeps the facts it was made with: its kind, the
-- code and link in clear (the point of an outbox is to hand them to the developer), and where the code waits
-- (user_id, token_column, code_hash), from which the outbox page tells whether the code is used or expired.
-- No foreign key to users: a message outlives a deleted user, and then shows its code as used.
--
-- A migration runs the same on every database, so production has this table too, and it stays empty there:
-- production requires SMTP_HOST and fails a text it cannot send, and its servers are built with no outbox at all
-- (NoOutbox), so nothing ever writes a code here outside the embedded default.

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}outbox (
  id bigserial PRIMARY KEY,
  sent_at timestamptz NOT NULL,
  channel text NOT NULL CHECK (channel IN ('email', 'sms')),
  recipient text NOT NULL,
  subject text NULL,
  html text NULL,
  body text NULL,
  type text NULL,
  code text NULL,
  link text NULL,
  user_id uuid NULL,
  token_column text NULL,
  code_hash text NULL
);
