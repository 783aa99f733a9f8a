-- What Gatehouse keeps beside each pending one-time token of a user (GoTrue's users.*_token columns), at most one
-- row per user and kind of token:
-- - link_digest: the SHA-256 of the link token the mail carries (224 random bits), never the token itself. A link
--   is independent of the typed code, so knowing the address no longer lets anyone compute it (GoTrue's link is
--   sha224(address + code), which anyone can enumerate offline). NULL for a texted code, which has no link.
-- - code_hash: the value the users column held when the token was issued; the link is live only while the column
--   still holds it, so spending, replacing or clearing the token there also kills the link.
-- - reclaim, signup_password, signup_data: a sign-up of an address that was already signed up and is still
--   unconfirmed. Its confirmation activates only what that sign-up brought, and clears every other password,
--   identity and session of the account.
-- The row's creation marks the token as Gatehouse's: GoTrue's own form of a link (the code hash) is accepted only
-- for tokens written before this migration ran (its applied_at), and only until they expire.

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}pending_tokens (
  user_id uuid NOT NULL REFERENCES {{schema}}.{{prefix}}users (id) ON DELETE CASCADE,
  token_kind text NOT NULL,
  link_digest text NULL,
  code_hash text NOT NULL,
  created_at timestamptz NOT NULL,
  reclaim boolean NOT NULL DEFAULT false,
  signup_password text NULL,
  signup_data jsonb NULL,
  PRIMARY KEY (user_id, token_kind)
);
CREATE UNIQUE INDEX IF NOT EXISTS {{prefix}}pending_tokens_link_digest_key
  ON {{schema}}.{{prefix}}pending_tokens (link_digest) WHERE link_digest IS NOT NULL;
