-- External-provider sign-in keeps its state where GoTrue keeps it, so a shared database reads the same: the
-- flow_state row the /authorize request makes (its id is the `state` the provider hands back), with GoTrue's later
-- columns for where to send the browser afterwards (referrer) and the provider-side PKCE verifier, which lives in
-- oauth_client_states. The PKCE columns become nullable, as in GoTrue, because an implicit OAuth flow has a row too.

ALTER TABLE {{schema}}.{{prefix}}flow_state ALTER COLUMN auth_code DROP NOT NULL;
ALTER TABLE {{schema}}.{{prefix}}flow_state ALTER COLUMN code_challenge_method DROP NOT NULL;
ALTER TABLE {{schema}}.{{prefix}}flow_state ALTER COLUMN code_challenge DROP NOT NULL;
ALTER TABLE {{schema}}.{{prefix}}flow_state ADD COLUMN IF NOT EXISTS referrer text NULL;
ALTER TABLE {{schema}}.{{prefix}}flow_state ADD COLUMN IF NOT EXISTS oauth_client_state_id uuid NULL;

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}oauth_client_states (
  id uuid PRIMARY KEY,
  provider_type text NOT NULL,
  code_verifier text NULL,
  created_at timestamptz NOT NULL
);

CREATE INDEX IF NOT EXISTS {{prefix}}idx_oauth_client_states_created_at ON {{schema}}.{{prefix}}oauth_client_states (created_at);
