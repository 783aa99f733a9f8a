-- GoTrue's SAML single sign-on tables, exactly as GoTrue's own migrations leave them (v2.196): sso_providers,
-- sso_domains, saml_providers and saml_relay_states, with GoTrue's column types, checks, constraint and index names.
-- Every statement tolerates a database GoTrue created first (a project switching from Supabase Auth keeps its SSO
-- providers and their domains), and nothing of GoTrue's is changed: the statements add what is missing.

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}sso_providers (
  id uuid NOT NULL,
  resource_id text,
  created_at timestamp with time zone,
  updated_at timestamp with time zone,
  disabled boolean,
  CONSTRAINT {{prefix}}sso_providers_pkey PRIMARY KEY (id),
  CONSTRAINT "resource_id not empty" CHECK (((resource_id = NULL::text) OR (char_length(resource_id) > 0)))
);
ALTER TABLE {{schema}}.{{prefix}}sso_providers ADD COLUMN IF NOT EXISTS disabled boolean;
CREATE UNIQUE INDEX IF NOT EXISTS {{prefix}}sso_providers_resource_id_idx ON {{schema}}.{{prefix}}sso_providers (lower(resource_id));
CREATE INDEX IF NOT EXISTS {{prefix}}sso_providers_resource_id_pattern_idx ON {{schema}}.{{prefix}}sso_providers (resource_id text_pattern_ops);

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}sso_domains (
  id uuid NOT NULL,
  sso_provider_id uuid NOT NULL,
  domain text NOT NULL,
  created_at timestamp with time zone,
  updated_at timestamp with time zone,
  CONSTRAINT {{prefix}}sso_domains_pkey PRIMARY KEY (id),
  CONSTRAINT "domain not empty" CHECK ((char_length(domain) > 0)),
  CONSTRAINT {{prefix}}sso_domains_sso_provider_id_fkey FOREIGN KEY (sso_provider_id)
    REFERENCES {{schema}}.{{prefix}}sso_providers (id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX IF NOT EXISTS {{prefix}}sso_domains_domain_idx ON {{schema}}.{{prefix}}sso_domains (lower(domain));
CREATE INDEX IF NOT EXISTS {{prefix}}sso_domains_sso_provider_id_idx ON {{schema}}.{{prefix}}sso_domains (sso_provider_id);

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}saml_providers (
  id uuid NOT NULL,
  sso_provider_id uuid NOT NULL,
  entity_id text NOT NULL,
  metadata_xml text NOT NULL,
  metadata_url text,
  attribute_mapping jsonb,
  created_at timestamp with time zone,
  updated_at timestamp with time zone,
  name_id_format text,
  CONSTRAINT {{prefix}}saml_providers_pkey PRIMARY KEY (id),
  CONSTRAINT {{prefix}}saml_providers_entity_id_key UNIQUE (entity_id),
  CONSTRAINT "entity_id not empty" CHECK ((char_length(entity_id) > 0)),
  CONSTRAINT "metadata_url not empty" CHECK (((metadata_url = NULL::text) OR (char_length(metadata_url) > 0))),
  CONSTRAINT "metadata_xml not empty" CHECK ((char_length(metadata_xml) > 0)),
  CONSTRAINT {{prefix}}saml_providers_sso_provider_id_fkey FOREIGN KEY (sso_provider_id)
    REFERENCES {{schema}}.{{prefix}}sso_providers (id) ON DELETE CASCADE
);
ALTER TABLE {{schema}}.{{prefix}}saml_providers ADD COLUMN IF NOT EXISTS name_id_format text;
CREATE INDEX IF NOT EXISTS {{prefix}}saml_providers_sso_provider_id_idx ON {{schema}}.{{prefix}}saml_providers (sso_provider_id);

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}saml_relay_states (
  id uuid NOT NULL,
  sso_provider_id uuid NOT NULL,
  request_id text NOT NULL,
  for_email text,
  redirect_to text,
  created_at timestamp with time zone,
  updated_at timestamp with time zone,
  flow_state_id uuid,
  CONSTRAINT {{prefix}}saml_relay_states_pkey PRIMARY KEY (id),
  CONSTRAINT "request_id not empty" CHECK ((char_length(request_id) > 0)),
  CONSTRAINT {{prefix}}saml_relay_states_sso_provider_id_fkey FOREIGN KEY (sso_provider_id)
    REFERENCES {{schema}}.{{prefix}}sso_providers (id) ON DELETE CASCADE
);
ALTER TABLE {{schema}}.{{prefix}}saml_relay_states ADD COLUMN IF NOT EXISTS flow_state_id uuid;

-- Older GoTrue databases have saml_relay_states without its flow_state link.
DO $$
BEGIN
  ALTER TABLE {{schema}}.{{prefix}}saml_relay_states
    ADD CONSTRAINT {{prefix}}saml_relay_states_flow_state_id_fkey FOREIGN KEY (flow_state_id)
    REFERENCES {{schema}}.{{prefix}}flow_state (id) ON DELETE CASCADE;
EXCEPTION
  WHEN duplicate_object OR duplicate_table THEN NULL;
END
$$;

CREATE INDEX IF NOT EXISTS {{prefix}}saml_relay_states_created_at_idx ON {{schema}}.{{prefix}}saml_relay_states (created_at DESC);
CREATE INDEX IF NOT EXISTS {{prefix}}saml_relay_states_for_email_idx ON {{schema}}.{{prefix}}saml_relay_states (for_email);
CREATE INDEX IF NOT EXISTS {{prefix}}saml_relay_states_sso_provider_id_idx ON {{schema}}.{{prefix}}saml_relay_states (sso_provider_id);
