-- GoTrue's OAuth 2.1 server (Gatehouse as an identity provider), exactly as GoTrue's own migrations leave it (v2.196):
-- the enums oauth_registration_type, oauth_client_type, oauth_authorization_status and oauth_response_type, the
-- tables oauth_clients, oauth_authorizations and oauth_consents, and the sessions' oauth_client_id and scopes. Every
-- statement tolerates a database GoTrue created first: a project switching from Supabase Auth brings its clients
-- (their secret hashes), its users' consents and its OAuth sessions, and they keep working.
--
-- One difference on a fresh database: oauth_authorizations.code_challenge_method is text with a CHECK, as Gatehouse's
-- flow_state has it (GoTrue's enum type code_challenge_method exists only in GoTrue databases, which keep their column).

DO $$
BEGIN
  CREATE TYPE {{schema}}.{{prefix}}oauth_registration_type AS ENUM ('dynamic', 'manual');
EXCEPTION
  WHEN duplicate_object THEN NULL;
END
$$;

DO $$
BEGIN
  CREATE TYPE {{schema}}.{{prefix}}oauth_client_type AS ENUM ('public', 'confidential');
EXCEPTION
  WHEN duplicate_object THEN NULL;
END
$$;

DO $$
BEGIN
  CREATE TYPE {{schema}}.{{prefix}}oauth_authorization_status AS ENUM ('pending', 'approved', 'denied', 'expired');
EXCEPTION
  WHEN duplicate_object THEN NULL;
END
$$;

DO $$
BEGIN
  CREATE TYPE {{schema}}.{{prefix}}oauth_response_type AS ENUM ('code');
EXCEPTION
  WHEN duplicate_object THEN NULL;
END
$$;

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}oauth_clients (
  id uuid NOT NULL,
  client_secret_hash text NULL,
  registration_type {{schema}}.{{prefix}}oauth_registration_type NOT NULL,
  redirect_uris text NOT NULL,
  grant_types text NOT NULL,
  client_name text NULL,
  client_uri text NULL,
  logo_uri text NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  deleted_at timestamp with time zone NULL,
  client_type {{schema}}.{{prefix}}oauth_client_type NOT NULL DEFAULT 'confidential',
  token_endpoint_auth_method text NOT NULL
    CHECK (token_endpoint_auth_method IN ('client_secret_basic', 'client_secret_post', 'none')),
  CONSTRAINT {{prefix}}oauth_clients_pkey PRIMARY KEY (id),
  CONSTRAINT {{prefix}}oauth_clients_client_name_length CHECK (char_length(client_name) <= 1024),
  CONSTRAINT {{prefix}}oauth_clients_client_uri_length CHECK (char_length(client_uri) <= 2048),
  CONSTRAINT {{prefix}}oauth_clients_logo_uri_length CHECK (char_length(logo_uri) <= 2048)
);
CREATE INDEX IF NOT EXISTS {{prefix}}oauth_clients_deleted_at_idx ON {{schema}}.{{prefix}}oauth_clients (deleted_at);

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}oauth_authorizations (
  id uuid NOT NULL,
  authorization_id text NOT NULL,
  client_id uuid NOT NULL REFERENCES {{schema}}.{{prefix}}oauth_clients (id) ON DELETE CASCADE,
  user_id uuid NULL REFERENCES {{schema}}.{{prefix}}users (id) ON DELETE CASCADE,
  redirect_uri text NOT NULL,
  scope text NOT NULL,
  state text NULL,
  resource text NULL,
  code_challenge text NULL,
  code_challenge_method text NULL CHECK (code_challenge_method IN ('s256', 'plain')),
  response_type {{schema}}.{{prefix}}oauth_response_type NOT NULL DEFAULT 'code',
  status {{schema}}.{{prefix}}oauth_authorization_status NOT NULL DEFAULT 'pending',
  authorization_code text NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  expires_at timestamp with time zone NOT NULL DEFAULT (now() + interval '3 minutes'),
  approved_at timestamp with time zone NULL,
  nonce text NULL,
  CONSTRAINT {{prefix}}oauth_authorizations_pkey PRIMARY KEY (id),
  CONSTRAINT {{prefix}}oauth_authorizations_authorization_id_key UNIQUE (authorization_id),
  CONSTRAINT {{prefix}}oauth_authorizations_authorization_code_key UNIQUE (authorization_code),
  CONSTRAINT {{prefix}}oauth_authorizations_redirect_uri_length CHECK (char_length(redirect_uri) <= 2048),
  CONSTRAINT {{prefix}}oauth_authorizations_scope_length CHECK (char_length(scope) <= 4096),
  CONSTRAINT {{prefix}}oauth_authorizations_state_length CHECK (char_length(state) <= 4096),
  CONSTRAINT {{prefix}}oauth_authorizations_resource_length CHECK (char_length(resource) <= 2048),
  CONSTRAINT {{prefix}}oauth_authorizations_code_challenge_length CHECK (char_length(code_challenge) <= 128),
  CONSTRAINT {{prefix}}oauth_authorizations_authorization_code_length CHECK (char_length(authorization_code) <= 255),
  CONSTRAINT {{prefix}}oauth_authorizations_expires_at_future CHECK (expires_at > created_at),
  CONSTRAINT {{prefix}}oauth_authorizations_nonce_length CHECK (char_length(nonce) <= 255)
);
-- A GoTrue database from before its nonce migration.
ALTER TABLE {{schema}}.{{prefix}}oauth_authorizations ADD COLUMN IF NOT EXISTS nonce text NULL;
CREATE INDEX IF NOT EXISTS {{prefix}}oauth_auth_pending_exp_idx
  ON {{schema}}.{{prefix}}oauth_authorizations (expires_at) WHERE status = 'pending';

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}oauth_consents (
  id uuid NOT NULL,
  user_id uuid NOT NULL REFERENCES {{schema}}.{{prefix}}users (id) ON DELETE CASCADE,
  client_id uuid NOT NULL REFERENCES {{schema}}.{{prefix}}oauth_clients (id) ON DELETE CASCADE,
  scopes text NOT NULL,
  granted_at timestamp with time zone NOT NULL DEFAULT now(),
  revoked_at timestamp with time zone NULL,
  CONSTRAINT {{prefix}}oauth_consents_pkey PRIMARY KEY (id),
  CONSTRAINT {{prefix}}oauth_consents_user_client_unique UNIQUE (user_id, client_id),
  CONSTRAINT {{prefix}}oauth_consents_scopes_length CHECK (char_length(scopes) <= 2048),
  CONSTRAINT {{prefix}}oauth_consents_scopes_not_empty CHECK (char_length(trim(scopes)) > 0),
  CONSTRAINT {{prefix}}oauth_consents_revoked_after_granted CHECK (revoked_at IS NULL OR revoked_at >= granted_at)
);
CREATE INDEX IF NOT EXISTS {{prefix}}oauth_consents_active_user_client_idx
  ON {{schema}}.{{prefix}}oauth_consents (user_id, client_id) WHERE revoked_at IS NULL;
CREATE INDEX IF NOT EXISTS {{prefix}}oauth_consents_user_order_idx
  ON {{schema}}.{{prefix}}oauth_consents (user_id, granted_at DESC);
CREATE INDEX IF NOT EXISTS {{prefix}}oauth_consents_active_client_idx
  ON {{schema}}.{{prefix}}oauth_consents (client_id) WHERE revoked_at IS NULL;

-- The OAuth client a session was started for, and the scopes it was granted (NULL: not an OAuth session).
ALTER TABLE {{schema}}.{{prefix}}sessions ADD COLUMN IF NOT EXISTS oauth_client_id uuid;
ALTER TABLE {{schema}}.{{prefix}}sessions ADD COLUMN IF NOT EXISTS scopes text;

DO $$
BEGIN
  ALTER TABLE {{schema}}.{{prefix}}sessions
    ADD CONSTRAINT {{prefix}}sessions_oauth_client_id_fkey FOREIGN KEY (oauth_client_id)
    REFERENCES {{schema}}.{{prefix}}oauth_clients (id) ON DELETE CASCADE;
EXCEPTION
  WHEN duplicate_object OR duplicate_table THEN NULL;
END
$$;

DO $$
BEGIN
  ALTER TABLE {{schema}}.{{prefix}}sessions
    ADD CONSTRAINT {{prefix}}sessions_scopes_length CHECK (char_length(scopes) <= 4096);
EXCEPTION
  WHEN duplicate_object OR duplicate_table THEN NULL;
END
$$;

CREATE INDEX IF NOT EXISTS {{prefix}}sessions_oauth_client_id_idx ON {{schema}}.{{prefix}}sessions (oauth_client_id);
