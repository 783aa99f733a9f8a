-- S1: no locks. Everything the decision needs, and the id a child would take.
PREPARE s1(text) AS
SELECT r.id::text AS id, r.token, r.user_id, r.revoked, r.updated_at, r.session_id,
  s.id AS session_found, s.not_after, s.refresh_token_hmac_key AS signed_key,
  (s.refresh_token_counter > r.id AND r.created_at < s.refreshed_at AT TIME ZONE 'UTC') AS moved_on,
  c.id::text AS current_id, c.token AS current_token, c.parent AS current_parent,
  nextval(pg_get_serial_sequence('auth.refresh_tokens', 'id'))::text AS next_id,
  u.*,
  COALESCE((SELECT json_agg(json_build_object('id', i.id, 'provider', i.provider) ORDER BY i.created_at, i.id)
    FROM auth.identities i WHERE i.user_id = u.id), '[]'::json) AS identities_json
FROM auth.refresh_tokens r
LEFT JOIN auth.sessions s ON s.id = r.session_id
LEFT JOIN LATERAL (SELECT id, token, parent FROM auth.refresh_tokens
  WHERE session_id = r.session_id AND revoked = false ORDER BY id DESC LIMIT 1) c ON true
LEFT JOIN auth.users u ON u.id = CASE WHEN r.user_id ~ '^[0-9a-f-]{36}$' THEN r.user_id::uuid END
WHERE r.token = $1;
-- S2: the rotation, atomic on its own; the session is locked before the token, and every check is re-made on the
-- locked rows (EvalPlanQual gives their latest versions): an unrevoked token rotates, anything else writes nothing.
PREPARE s2(uuid, bigint, bigint, text, text, text, timestamptz, json, json) AS
WITH s AS MATERIALIZED (
  SELECT s.id FROM auth.sessions s JOIN auth.users u ON u.id = s.user_id
  WHERE s.id = $1 AND s.refresh_token_hmac_key IS NULL AND s.refresh_token_counter IS NULL
    AND (s.not_after IS NULL OR s.not_after > $7) AND (u.banned_until IS NULL OR u.banned_until <= $7)
  FOR UPDATE OF s
), r AS MATERIALIZED (
  SELECT t.id, t.token FROM s JOIN LATERAL (
    SELECT id, token FROM auth.refresh_tokens WHERE id = $2 AND session_id = s.id AND revoked = false FOR UPDATE
  ) t ON true
), revoked AS (
  UPDATE auth.refresh_tokens SET revoked = true, updated_at = $7 WHERE id = (SELECT id FROM r) RETURNING id, token
), child AS (
  INSERT INTO auth.refresh_tokens (instance_id, id, token, user_id, revoked, created_at, updated_at, parent, session_id)
  SELECT '00000000-0000-0000-0000-000000000000', $3, $4, $5, false, $7, $7, revoked.token, $1 FROM revoked
), touched AS (
  UPDATE auth.sessions SET refreshed_at = $7, updated_at = $7 WHERE id = $1 AND EXISTS (SELECT 1 FROM revoked)
), audited AS (
  INSERT INTO auth.audit_log_entries (instance_id, id, payload, created_at, ip_address)
  SELECT '00000000-0000-0000-0000-000000000000', gen_random_uuid(), p, $7, '' FROM revoked, (VALUES ($8), ($9)) v(p)
)
SELECT (SELECT count(*) FROM revoked)::int AS rotated,
  COALESCE((SELECT json_agg(json_build_array(authentication_method, extract(epoch FROM updated_at)::bigint)
    ORDER BY updated_at DESC, authentication_method) FROM auth.mfa_amr_claims WHERE session_id = $1), '[]'::json) AS amr;
