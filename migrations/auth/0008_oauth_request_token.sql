-- OAuth 1.0a (twitter): the provider sends the browser back with the request token it issued (oauth_token) instead
-- of a state, so the flow is found by that token. It is kept with the flow's other provider-side state in
-- oauth_client_states (the token secret goes in code_verifier); a nullable column GoTrue's own code never reads.

ALTER TABLE {{schema}}.{{prefix}}oauth_client_states ADD COLUMN IF NOT EXISTS request_token text NULL;

CREATE UNIQUE INDEX IF NOT EXISTS {{prefix}}idx_oauth_client_states_request_token
  ON {{schema}}.{{prefix}}oauth_client_states (request_token) WHERE request_token IS NOT NULL;
