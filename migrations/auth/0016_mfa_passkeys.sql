-- GoTrue's second factors and passkeys, exactly as GoTrue's own migrations leave them (v2.196): the enums
-- factor_type and factor_status, mfa_factors, mfa_challenges, webauthn_credentials and webauthn_challenges, with
-- GoTrue's column types, constraint and index names. Every statement tolerates a database GoTrue created first:
-- a project switching from Supabase Auth brings its users' factors, and ignoring them would silently drop those
-- users to one factor. Older GoTrue databases lack the later columns and enum values, which are added here.
--
-- Gatehouse's one table of its own, mfa_factor_attempts, counts failed verifications per factor (a limit that
-- holds across instances, which GoTrue does not have); it sits beside mfa_factors so that table stays GoTrue's.

DO $$
BEGIN
  CREATE TYPE {{schema}}.{{prefix}}factor_type AS ENUM ('totp', 'webauthn', 'phone');
EXCEPTION
  WHEN duplicate_object THEN NULL;
END
$$;

DO $$
BEGIN
  CREATE TYPE {{schema}}.{{prefix}}factor_status AS ENUM ('unverified', 'verified');
EXCEPTION
  WHEN duplicate_object THEN NULL;
END
$$;

-- Nothing below uses the new values in this transaction, which is what PostgreSQL requires of ADD VALUE in one.
ALTER TYPE {{schema}}.{{prefix}}factor_type ADD VALUE IF NOT EXISTS 'webauthn';
ALTER TYPE {{schema}}.{{prefix}}factor_type ADD VALUE IF NOT EXISTS 'phone';

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}mfa_factors (
  id uuid NOT NULL,
  user_id uuid NOT NULL,
  friendly_name text,
  factor_type {{schema}}.{{prefix}}factor_type NOT NULL,
  status {{schema}}.{{prefix}}factor_status NOT NULL,
  created_at timestamp with time zone NOT NULL,
  updated_at timestamp with time zone NOT NULL,
  secret text,
  CONSTRAINT {{prefix}}mfa_factors_pkey PRIMARY KEY (id),
  CONSTRAINT {{prefix}}mfa_factors_user_id_fkey FOREIGN KEY (user_id)
    REFERENCES {{schema}}.{{prefix}}users (id) ON DELETE CASCADE
);
ALTER TABLE {{schema}}.{{prefix}}mfa_factors ADD COLUMN IF NOT EXISTS phone text;
ALTER TABLE {{schema}}.{{prefix}}mfa_factors ADD COLUMN IF NOT EXISTS last_challenged_at timestamp with time zone;
ALTER TABLE {{schema}}.{{prefix}}mfa_factors ADD COLUMN IF NOT EXISTS web_authn_credential jsonb;
ALTER TABLE {{schema}}.{{prefix}}mfa_factors ADD COLUMN IF NOT EXISTS web_authn_aaguid uuid;
ALTER TABLE {{schema}}.{{prefix}}mfa_factors ADD COLUMN IF NOT EXISTS last_webauthn_challenge_data jsonb;

DO $$
BEGIN
  ALTER TABLE {{schema}}.{{prefix}}mfa_factors
    ADD CONSTRAINT {{prefix}}mfa_factors_last_challenged_at_key UNIQUE (last_challenged_at);
EXCEPTION
  WHEN duplicate_object OR duplicate_table THEN NULL;
END
$$;

CREATE INDEX IF NOT EXISTS {{prefix}}factor_id_created_at_idx ON {{schema}}.{{prefix}}mfa_factors (user_id, created_at);
CREATE INDEX IF NOT EXISTS {{prefix}}mfa_factors_user_id_idx ON {{schema}}.{{prefix}}mfa_factors (user_id);
CREATE UNIQUE INDEX IF NOT EXISTS {{prefix}}mfa_factors_user_friendly_name_unique
  ON {{schema}}.{{prefix}}mfa_factors (friendly_name, user_id) WHERE TRIM(BOTH FROM friendly_name) <> '';
CREATE UNIQUE INDEX IF NOT EXISTS {{prefix}}unique_phone_factor_per_user ON {{schema}}.{{prefix}}mfa_factors (user_id, phone);

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}mfa_challenges (
  id uuid NOT NULL,
  factor_id uuid NOT NULL,
  created_at timestamp with time zone NOT NULL,
  verified_at timestamp with time zone,
  ip_address inet NOT NULL,
  CONSTRAINT {{prefix}}mfa_challenges_pkey PRIMARY KEY (id),
  CONSTRAINT {{prefix}}mfa_challenges_auth_factor_id_fkey FOREIGN KEY (factor_id)
    REFERENCES {{schema}}.{{prefix}}mfa_factors (id) ON DELETE CASCADE
);
ALTER TABLE {{schema}}.{{prefix}}mfa_challenges ADD COLUMN IF NOT EXISTS otp_code text;
ALTER TABLE {{schema}}.{{prefix}}mfa_challenges ADD COLUMN IF NOT EXISTS web_authn_session_data jsonb;
CREATE INDEX IF NOT EXISTS {{prefix}}mfa_challenge_created_at_idx ON {{schema}}.{{prefix}}mfa_challenges (created_at DESC);

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}webauthn_credentials (
  id uuid DEFAULT gen_random_uuid() NOT NULL,
  user_id uuid NOT NULL,
  credential_id bytea NOT NULL,
  public_key bytea NOT NULL,
  attestation_type text DEFAULT '' NOT NULL,
  aaguid uuid,
  sign_count bigint DEFAULT 0 NOT NULL,
  transports jsonb DEFAULT '[]'::jsonb NOT NULL,
  backup_eligible boolean DEFAULT false NOT NULL,
  backed_up boolean DEFAULT false NOT NULL,
  friendly_name text DEFAULT '' NOT NULL,
  created_at timestamp with time zone DEFAULT now() NOT NULL,
  updated_at timestamp with time zone DEFAULT now() NOT NULL,
  last_used_at timestamp with time zone,
  CONSTRAINT {{prefix}}webauthn_credentials_pkey PRIMARY KEY (id),
  CONSTRAINT {{prefix}}webauthn_credentials_user_id_fkey FOREIGN KEY (user_id)
    REFERENCES {{schema}}.{{prefix}}users (id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX IF NOT EXISTS {{prefix}}webauthn_credentials_credential_id_key
  ON {{schema}}.{{prefix}}webauthn_credentials (credential_id);
CREATE INDEX IF NOT EXISTS {{prefix}}webauthn_credentials_user_id_idx ON {{schema}}.{{prefix}}webauthn_credentials (user_id);

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}webauthn_challenges (
  id uuid DEFAULT gen_random_uuid() NOT NULL,
  user_id uuid,
  challenge_type text NOT NULL,
  session_data jsonb NOT NULL,
  created_at timestamp with time zone DEFAULT now() NOT NULL,
  expires_at timestamp with time zone NOT NULL,
  CONSTRAINT {{prefix}}webauthn_challenges_pkey PRIMARY KEY (id),
  CONSTRAINT {{prefix}}webauthn_challenges_challenge_type_check
    CHECK (challenge_type = ANY (ARRAY['signup'::text, 'registration'::text, 'authentication'::text])),
  CONSTRAINT {{prefix}}webauthn_challenges_user_id_fkey FOREIGN KEY (user_id)
    REFERENCES {{schema}}.{{prefix}}users (id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS {{prefix}}webauthn_challenges_expires_at_idx ON {{schema}}.{{prefix}}webauthn_challenges (expires_at);
CREATE INDEX IF NOT EXISTS {{prefix}}webauthn_challenges_user_id_idx ON {{schema}}.{{prefix}}webauthn_challenges (user_id);

-- Failed verifications per factor in the current window; a success or a new window resets them.
CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}mfa_factor_attempts (
  factor_id uuid PRIMARY KEY REFERENCES {{schema}}.{{prefix}}mfa_factors (id) ON DELETE CASCADE,
  failures integer NOT NULL,
  window_start timestamp with time zone NOT NULL
);
