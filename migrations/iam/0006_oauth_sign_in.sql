-- OAuth2 sign-in for IAM accounts (docs/iam.md, "OAuth2 sign-in").
--
-- A sign-in started by StartOAuthSignIn, waiting for FinishOAuthSignIn. Only the SHA-256 digest of the state is kept
-- (the state names the flow in the provider's redirect). `code_verifier` is the PKCE verifier sent with the code
-- exchange: it is useless without the provider's code and never answered. A flow is deleted when it is finished
-- (whatever the outcome: single use), and once expired (swept).
CREATE TABLE {{schema}}.{{prefix}}oauth_flows (
  state_hash text PRIMARY KEY,
  provider text NOT NULL,
  code_verifier text,
  expires_at timestamptz NOT NULL
);
CREATE INDEX ON {{schema}}.{{prefix}}oauth_flows (expires_at);
