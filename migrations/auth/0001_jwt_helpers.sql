-- The SQL helpers that row-level-security policies written for Supabase call (auth.uid(), auth.role(),
-- auth.email(), auth.jwt()). PostgREST puts the verified JWT claims into the request.jwt.claims setting; older
-- PostgREST versions set one request.jwt.claim.<name> setting per claim, so both are read.
CREATE OR REPLACE FUNCTION {{schema}}.jwt() RETURNS jsonb
  LANGUAGE sql STABLE
  AS $$
    SELECT coalesce(
      nullif(current_setting('request.jwt.claim', true), ''),
      nullif(current_setting('request.jwt.claims', true), '')
    )::jsonb
  $$;

CREATE OR REPLACE FUNCTION {{schema}}.uid() RETURNS uuid
  LANGUAGE sql STABLE
  AS $$
    SELECT coalesce(
      nullif(current_setting('request.jwt.claim.sub', true), ''),
      nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub'
    )::uuid
  $$;

CREATE OR REPLACE FUNCTION {{schema}}.role() RETURNS text
  LANGUAGE sql STABLE
  AS $$
    SELECT coalesce(
      nullif(current_setting('request.jwt.claim.role', true), ''),
      nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'role'
    )::text
  $$;

CREATE OR REPLACE FUNCTION {{schema}}.email() RETURNS text
  LANGUAGE sql STABLE
  AS $$
    SELECT coalesce(
      nullif(current_setting('request.jwt.claim.email', true), ''),
      nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'email'
    )::text
  $$;
