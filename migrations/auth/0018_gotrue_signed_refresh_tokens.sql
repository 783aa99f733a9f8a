-- GoTrue's signed refresh tokens ("algorithm v2", GoTrue migration 20251007112900): a session GoTrue started with
-- them has no refresh_tokens row; its token is signed with a key kept on the session row, and the row counts the
-- tokens issued. A database adopted from GoTrue has both columns, with rows Gatehouse must read to accept those
-- tokens; a database Gatehouse made gets them too, so both have one shape (and a project switching back to GoTrue
-- finds its columns). GoTrue's own columns are never changed: the statements add what is missing and nothing else.

ALTER TABLE {{schema}}.{{prefix}}sessions ADD COLUMN IF NOT EXISTS refresh_token_hmac_key text;
ALTER TABLE {{schema}}.{{prefix}}sessions ADD COLUMN IF NOT EXISTS refresh_token_counter bigint;

-- GoTrue's comments, written only where a column has none: a GoTrue database keeps its own (the same words), and
-- commenting on a table needs its owner, which the database role Gatehouse runs as may not be there.
DO $$
DECLARE
  sessions regclass := '{{schema}}.{{prefix}}sessions'::regclass;
BEGIN
  IF col_description(sessions, (SELECT attnum FROM pg_attribute WHERE attrelid = sessions AND attname = 'refresh_token_hmac_key')) IS NULL THEN
    COMMENT ON COLUMN {{schema}}.{{prefix}}sessions.refresh_token_hmac_key
      IS 'Holds a HMAC-SHA256 key used to sign refresh tokens for this session.';
  END IF;
  IF col_description(sessions, (SELECT attnum FROM pg_attribute WHERE attrelid = sessions AND attname = 'refresh_token_counter')) IS NULL THEN
    COMMENT ON COLUMN {{schema}}.{{prefix}}sessions.refresh_token_counter
      IS 'Holds the ID (counter) of the last issued refresh token.';
  END IF;
END
$$;
