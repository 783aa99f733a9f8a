-- GoTrue keeps no record of the SAML assertions it accepted: a signed response posted again without its RelayState
-- (the IdP-initiated path) signs the user in again for as long as the assertion's time bounds hold. Gatehouse
-- records each accepted assertion by digest (SHA-256 of the SSO provider's id and the verified assertion's ID) until
-- it could no longer pass the time checks, and refuses it a second time, on every instance. A Gatehouse table of its
-- own, so GoTrue's tables stay GoTrue's; swept once expired.

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}saml_used_assertions (
  digest bytea PRIMARY KEY,
  expires_at timestamptz NOT NULL
);

CREATE INDEX IF NOT EXISTS {{prefix}}saml_used_assertions_expires_at_idx ON {{schema}}.{{prefix}}saml_used_assertions (expires_at);
