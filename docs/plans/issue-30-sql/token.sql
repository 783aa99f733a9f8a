CREATE SCHEMA IF NOT EXISTS bench_seed;
CREATE OR REPLACE FUNCTION bench_seed.uvarint(v bigint) RETURNS bytea LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE out bytea := ''::bytea;
BEGIN
  WHILE v >= 128 LOOP
    out := out || set_byte('\x00'::bytea, 0, ((v & 127) | 128)::int);
    v := v >> 7;
  END LOOP;
  RETURN out || set_byte('\x00'::bytea, 0, v::int);
END $$;
-- sha256 hex digest of the Gatehouse refresh token of row `id` in session `sid`, refresh key `rk` (HMAC(secret, "gatehouse/refresh-token/v1")).
CREATE OR REPLACE FUNCTION bench_seed.token_digest(rk bytea, sid uuid, id bigint) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  WITH k AS (SELECT hmac(convert_to('gotrue-signed/' || sid::text, 'UTF8'), rk, 'sha256') AS key),
  s AS (SELECT '\x00'::bytea || decode(replace(sid::text, '-', ''), 'hex') || bench_seed.uvarint(id) AS signed),
  b AS (SELECT s.signed || substring(hmac(s.signed, k.key, 'sha256') FROM 1 FOR 16) AS body FROM s, k)
  SELECT encode(sha256(convert_to(
    rtrim(translate(replace(encode(b.body || substring(sha256(b.body) FROM 1 FOR 4), 'base64'), E'\n', ''), '+/', '-_'), '='),
    'UTF8')), 'hex') FROM b
$$;
