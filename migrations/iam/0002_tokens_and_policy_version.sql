-- State behind PASETO tokens and the policy cache. Tokens themselves are never stored: a refresh token is
-- known by its jti, an access token only when it is revoked.

-- One row per refresh token ever issued. A family is one sign-in: each rotation adds a child row and spends
-- its parent; presenting a spent token again revokes the whole family.
CREATE TABLE {{schema}}.{{prefix}}refresh_tokens (
  jti uuid PRIMARY KEY,
  family_id uuid NOT NULL,
  user_id integer NOT NULL REFERENCES {{schema}}.{{prefix}}users (id) ON DELETE CASCADE,
  parent_jti uuid,
  issued_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  spent_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX ON {{schema}}.{{prefix}}refresh_tokens (family_id);
CREATE INDEX ON {{schema}}.{{prefix}}refresh_tokens (user_id);
CREATE INDEX ON {{schema}}.{{prefix}}refresh_tokens (expires_at);

-- The denylist: access-token jtis (logout) and family ids (logout, reuse) revoked before they expire.
-- Every instance keeps the unexpired rows in memory; rows past expires_at can be deleted.
CREATE TABLE {{schema}}.{{prefix}}revocations (
  id uuid PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('access', 'family')),
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON {{schema}}.{{prefix}}revocations (expires_at);

-- Bumped in the transaction of every role or permission change: an instance that missed a notification
-- sees a new version on its next poll and reloads the policy.
CREATE TABLE {{schema}}.{{prefix}}policy_version (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  version bigint NOT NULL
);
INSERT INTO {{schema}}.{{prefix}}policy_version (singleton, version) VALUES (true, 1);
