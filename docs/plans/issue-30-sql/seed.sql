-- psql -v users=N -v sessions=N -v family=N -v audit=N -f seed.sql
\set ON_ERROR_STOP on
SET synchronous_commit = off;
BEGIN;
-- Users: deterministic ids (md5-derived uuids), emails size-NNNNNNN@seed.example, bcrypt-shaped hash (nobody signs in as them).
INSERT INTO auth.users (instance_id, id, aud, role, email, encrypted_password, email_confirmed_at, raw_app_meta_data,
  raw_user_meta_data, created_at, updated_at, last_sign_in_at, is_anonymous, is_sso_user)
SELECT '00000000-0000-0000-0000-000000000000', md5('seed-user-' || g)::uuid, 'authenticated', 'authenticated',
  'size-' || lpad(g::text, 7, '0') || '@seed.example',
  '$2a$10$abcdefghijklmnopqrstuu7Ka8Gy3.cbEXn5Ow4f3Yc.9ydqHmS2m',
  now() - (g || ' seconds')::interval,
  '{"provider":"email","providers":["email"]}'::jsonb,
  jsonb_build_object('sub', md5('seed-user-' || g)::uuid, 'email', 'size-' || lpad(g::text, 7, '0') || '@seed.example',
    'email_verified', true, 'phone_verified', false, 'full_name', 'Seed Person ' || g),
  now() - interval '400 days' + (g || ' seconds')::interval, now(), now() - (g % 1000 || ' minutes')::interval, false, false
FROM generate_series(1, :users) g;
INSERT INTO auth.identities (id, provider_id, user_id, identity_data, provider, last_sign_in_at, created_at, updated_at)
SELECT md5('seed-identity-' || g)::uuid, md5('seed-user-' || g)::uuid::text, md5('seed-user-' || g)::uuid,
  jsonb_build_object('sub', md5('seed-user-' || g)::uuid, 'email', 'size-' || lpad(g::text, 7, '0') || '@seed.example',
    'email_verified', false, 'phone_verified', false),
  'email', now(), now() - interval '400 days' + (g || ' seconds')::interval, now()
FROM generate_series(1, :users) g;
-- Sessions: one for each of the first :sessions users.
INSERT INTO auth.sessions (id, user_id, created_at, updated_at, aal, refreshed_at)
SELECT md5('seed-session-' || s)::uuid, md5('seed-user-' || s)::uuid, now() - interval '30 days', now(), 'aal1', now() - (s % 3600 || ' seconds')::interval
FROM generate_series(1, :sessions) s;
-- Refresh tokens: each session a chain of :family, oldest first; all revoked but the last; parent = previous digest.
INSERT INTO auth.refresh_tokens (instance_id, token, user_id, revoked, created_at, updated_at, parent, session_id)
SELECT '00000000-0000-0000-0000-000000000000',
  encode(sha256(('seed-rt-' || s || '-' || k)::bytea), 'hex'),
  md5('seed-user-' || s)::uuid::text,
  k < :family,
  now() - interval '30 days' + (k || ' hours')::interval,
  now() - interval '30 days' + ((k + 1) || ' hours')::interval,
  CASE WHEN k = 1 THEN NULL ELSE encode(sha256(('seed-rt-' || s || '-' || (k - 1))::bytea), 'hex') END,
  md5('seed-session-' || s)::uuid
FROM generate_series(1, :sessions) s, generate_series(1, :family) k
ORDER BY k, s;
-- Audit: GoTrue payloads, half of them token_refreshed.
INSERT INTO auth.audit_log_entries (instance_id, id, payload, created_at, ip_address)
SELECT '00000000-0000-0000-0000-000000000000', md5('seed-audit-' || a)::uuid,
  json_build_object('actor_id', md5('seed-user-' || (a % :users + 1))::uuid, 'actor_username', 'size-' || lpad((a % :users + 1)::text, 7, '0') || '@seed.example',
    'actor_via_sso', false, 'action', (ARRAY['token_refreshed','token_revoked','login','user_signedup'])[a % 4 + 1],
    'log_type', (ARRAY['token','token','account','team'])[a % 4 + 1]),
  now() - interval '400 days' + (a * 10 || ' seconds')::interval, ''
FROM generate_series(1, :audit) a;
COMMIT;
VACUUM ANALYZE auth.users, auth.identities, auth.sessions, auth.refresh_tokens, auth.audit_log_entries;
