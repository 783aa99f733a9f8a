-- Users, identities, sessions and refresh tokens, with GoTrue's table and column names so that tools and
-- row-level-security policies written for Supabase keep working against Gatehouse. Every statement tolerates
-- tables that already exist (a database that GoTrue created first).

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}users (
  instance_id uuid NULL,
  id uuid NOT NULL PRIMARY KEY,
  aud varchar(255) NULL,
  role varchar(255) NULL,
  email varchar(255) NULL,
  encrypted_password varchar(255) NULL,
  email_confirmed_at timestamptz NULL,
  invited_at timestamptz NULL,
  confirmation_token varchar(255) NULL,
  confirmation_sent_at timestamptz NULL,
  recovery_token varchar(255) NULL,
  recovery_sent_at timestamptz NULL,
  email_change_token_new varchar(255) NULL,
  email_change varchar(255) NULL,
  email_change_sent_at timestamptz NULL,
  email_change_token_current varchar(255) NULL DEFAULT '',
  email_change_confirm_status smallint NULL DEFAULT 0 CHECK (email_change_confirm_status >= 0 AND email_change_confirm_status <= 2),
  last_sign_in_at timestamptz NULL,
  raw_app_meta_data jsonb NULL,
  raw_user_meta_data jsonb NULL,
  is_super_admin boolean NULL,
  created_at timestamptz NULL,
  updated_at timestamptz NULL,
  phone text NULL DEFAULT NULL,
  phone_confirmed_at timestamptz NULL,
  phone_change text NULL DEFAULT '',
  phone_change_token varchar(255) NULL DEFAULT '',
  phone_change_sent_at timestamptz NULL,
  confirmed_at timestamptz GENERATED ALWAYS AS (LEAST(email_confirmed_at, phone_confirmed_at)) STORED,
  banned_until timestamptz NULL,
  reauthentication_token varchar(255) NULL DEFAULT '',
  reauthentication_sent_at timestamptz NULL,
  is_sso_user boolean NOT NULL DEFAULT false,
  deleted_at timestamptz NULL,
  is_anonymous boolean NOT NULL DEFAULT false
);
CREATE UNIQUE INDEX IF NOT EXISTS {{prefix}}users_email_partial_key
  ON {{schema}}.{{prefix}}users (email) WHERE (is_sso_user = false);
CREATE UNIQUE INDEX IF NOT EXISTS {{prefix}}users_phone_key ON {{schema}}.{{prefix}}users (phone);
CREATE INDEX IF NOT EXISTS {{prefix}}users_instance_id_email_idx ON {{schema}}.{{prefix}}users (instance_id, lower(email));
CREATE INDEX IF NOT EXISTS {{prefix}}users_is_anonymous_idx ON {{schema}}.{{prefix}}users (is_anonymous);

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}identities (
  provider_id text NOT NULL,
  user_id uuid NOT NULL REFERENCES {{schema}}.{{prefix}}users (id) ON DELETE CASCADE,
  identity_data jsonb NOT NULL,
  provider text NOT NULL,
  last_sign_in_at timestamptz NULL,
  created_at timestamptz NULL,
  updated_at timestamptz NULL,
  email text GENERATED ALWAYS AS (lower(identity_data ->> 'email')) STORED,
  id uuid NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
  CONSTRAINT {{prefix}}identities_provider_id_provider_unique UNIQUE (provider_id, provider)
);
CREATE INDEX IF NOT EXISTS {{prefix}}identities_user_id_idx ON {{schema}}.{{prefix}}identities (user_id);
CREATE INDEX IF NOT EXISTS {{prefix}}identities_email_idx ON {{schema}}.{{prefix}}identities (email text_pattern_ops);

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}sessions (
  id uuid NOT NULL PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES {{schema}}.{{prefix}}users (id) ON DELETE CASCADE,
  created_at timestamptz NULL,
  updated_at timestamptz NULL,
  factor_id uuid NULL,
  aal text NULL CHECK (aal IN ('aal1', 'aal2', 'aal3')),
  not_after timestamptz NULL,
  refreshed_at timestamptz NULL,
  user_agent text NULL,
  ip inet NULL,
  tag text NULL
);
CREATE INDEX IF NOT EXISTS {{prefix}}sessions_user_id_idx ON {{schema}}.{{prefix}}sessions (user_id);
CREATE INDEX IF NOT EXISTS {{prefix}}sessions_not_after_idx ON {{schema}}.{{prefix}}sessions (not_after DESC);

-- `token` and `parent` hold SHA-256 digests of the tokens handed out, never the tokens themselves.
CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}refresh_tokens (
  instance_id uuid NULL,
  id bigserial PRIMARY KEY,
  token varchar(255) NULL,
  user_id varchar(255) NULL,
  revoked boolean NULL,
  created_at timestamptz NULL,
  updated_at timestamptz NULL,
  parent varchar(255) NULL,
  session_id uuid NULL REFERENCES {{schema}}.{{prefix}}sessions (id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX IF NOT EXISTS {{prefix}}refresh_tokens_token_unique ON {{schema}}.{{prefix}}refresh_tokens (token);
CREATE INDEX IF NOT EXISTS {{prefix}}refresh_tokens_parent_idx ON {{schema}}.{{prefix}}refresh_tokens (parent);
CREATE INDEX IF NOT EXISTS {{prefix}}refresh_tokens_session_id_revoked_idx ON {{schema}}.{{prefix}}refresh_tokens (session_id, revoked);
CREATE INDEX IF NOT EXISTS {{prefix}}refresh_tokens_instance_id_user_id_idx ON {{schema}}.{{prefix}}refresh_tokens (instance_id, user_id);

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}mfa_amr_claims (
  session_id uuid NOT NULL REFERENCES {{schema}}.{{prefix}}sessions (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  authentication_method text NOT NULL,
  id uuid NOT NULL PRIMARY KEY,
  CONSTRAINT {{prefix}}mfa_amr_claims_session_id_authentication_method_pkey UNIQUE (session_id, authentication_method)
);
