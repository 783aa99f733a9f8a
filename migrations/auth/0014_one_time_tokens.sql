-- GoTrue's one_time_tokens, exactly as GoTrue's own migration (20240427152123) makes it: its enum type, columns,
-- check, unique (user_id, token_type) and hash indexes. Every statement tolerates a database GoTrue created first,
-- whose table already holds GoTrue's rows.
--
-- Gatehouse keeps it in step as GoTrue does, so that a database switched back to GoTrue finds a row for each pending
-- token: one row per user and token type (the users column the token waits in), with token_hash = what that column
-- holds (the typed code's hash, sha224(address + code), `pkce_`-prefixed in a PKCE flow) and relates_to = the
-- lower-cased address it was sent to; the row goes when its token is spent, replaced or cleared. Gatehouse's own
-- link tokens are never written here: they are stored only as digests (pending_tokens), and GoTrue would look a link
-- up by its raw value. After a switch back, GoTrue still takes the codes Gatehouse sent, and its own form of their
-- links (the code hash); the links Gatehouse mailed stop working.

DO $$
BEGIN
  CREATE TYPE {{schema}}.{{prefix}}one_time_token_type AS ENUM (
    'confirmation_token',
    'reauthentication_token',
    'recovery_token',
    'email_change_token_new',
    'email_change_token_current',
    'phone_change_token'
  );
EXCEPTION
  WHEN duplicate_object THEN NULL;
END
$$;

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}one_time_tokens (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES {{schema}}.{{prefix}}users ON DELETE CASCADE,
  token_type {{schema}}.{{prefix}}one_time_token_type NOT NULL,
  token_hash text NOT NULL,
  relates_to text NOT NULL,
  created_at timestamp without time zone NOT NULL DEFAULT now(),
  updated_at timestamp without time zone NOT NULL DEFAULT now(),
  CHECK (char_length(token_hash) > 0)
);

CREATE INDEX IF NOT EXISTS {{prefix}}one_time_tokens_token_hash_hash_idx
  ON {{schema}}.{{prefix}}one_time_tokens USING hash (token_hash);
CREATE INDEX IF NOT EXISTS {{prefix}}one_time_tokens_relates_to_hash_idx
  ON {{schema}}.{{prefix}}one_time_tokens USING hash (relates_to);
CREATE UNIQUE INDEX IF NOT EXISTS {{prefix}}one_time_tokens_user_id_token_type_key
  ON {{schema}}.{{prefix}}one_time_tokens (user_id, token_type);
