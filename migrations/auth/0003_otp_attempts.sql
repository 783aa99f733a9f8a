-- Failed /verify attempts per user and kind of token (GoTrue keeps no such count). Each row counts failures
-- against one stored token hash, so a newly sent token starts from zero without the senders touching this table.
-- A table of its own rather than a users column keeps the users table exactly GoTrue's.

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}otp_attempts (
  user_id uuid NOT NULL REFERENCES {{schema}}.{{prefix}}users (id) ON DELETE CASCADE,
  token_kind text NOT NULL,
  token_hash text NOT NULL,
  failures integer NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (user_id, token_kind)
);
