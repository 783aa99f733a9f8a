-- A session (a refresh family) can have an end that no refresh moves: GenerateToken's ttl_seconds. Every row of
-- the family carries it, so that the instance which rotates a token, whichever it is, bounds the child and its
-- access token by it. NULL: a session that lasts as long as it keeps being refreshed (sign-in, register).
ALTER TABLE {{schema}}.{{prefix}}refresh_tokens ADD COLUMN session_ends_at timestamptz;
-- A refresh within the reuse interval hands out the spent token's child again: found by its parent.
CREATE INDEX ON {{schema}}.{{prefix}}refresh_tokens (parent_jti);
