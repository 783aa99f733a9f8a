-- GoTrue's flow_state: one row per PKCE flow, from the request that carried a code_challenge to the
-- /token?grant_type=pkce exchange that deletes it. GoTrue's column names and types, so a shared database reads the
-- same; code_challenge_method is a text with a CHECK where GoTrue has an enum type, which needs no DO block to be
-- created idempotently.

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}flow_state (
  id uuid PRIMARY KEY,
  user_id uuid NULL,
  auth_code text NOT NULL,
  code_challenge_method text NOT NULL CHECK (code_challenge_method IN ('s256', 'plain')),
  code_challenge text NOT NULL,
  provider_type text NOT NULL,
  provider_access_token text NULL,
  provider_refresh_token text NULL,
  created_at timestamptz NULL,
  updated_at timestamptz NULL,
  authentication_method text NOT NULL,
  auth_code_issued_at timestamptz NULL
);

CREATE INDEX IF NOT EXISTS {{prefix}}idx_auth_code ON {{schema}}.{{prefix}}flow_state (auth_code);
CREATE INDEX IF NOT EXISTS {{prefix}}idx_user_id_auth_method ON {{schema}}.{{prefix}}flow_state (user_id, authentication_method);
