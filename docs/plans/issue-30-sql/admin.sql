\set ON_ERROR_STOP on
CREATE INDEX IF NOT EXISTS users_aud_created_at_idx ON auth.users (aud, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS users_email_trgm_idx ON auth.users USING gin (email gin_trgm_ops);
CREATE INDEX IF NOT EXISTS users_phone_trgm_idx ON auth.users USING gin (phone gin_trgm_ops);
CREATE INDEX IF NOT EXISTS users_full_name_trgm_idx ON auth.users USING gin ((raw_user_meta_data ->> 'full_name') gin_trgm_ops);
CREATE TABLE IF NOT EXISTS auth.gatehouse_row_counts (
  tbl text NOT NULL, part text NOT NULL, shard smallint NOT NULL, n bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (tbl, part, shard));
CREATE OR REPLACE FUNCTION auth.gatehouse_count_users() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO auth.gatehouse_row_counts AS c (tbl, part, shard, n)
    SELECT 'users', coalesce(aud, ''), pg_backend_pid() % 16, count(*) FROM new_rows GROUP BY 2
    ON CONFLICT (tbl, part, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
  END IF;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    INSERT INTO auth.gatehouse_row_counts AS c (tbl, part, shard, n)
    SELECT 'users', coalesce(aud, ''), pg_backend_pid() % 16, -count(*) FROM old_rows GROUP BY 2
    ON CONFLICT (tbl, part, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS gatehouse_count_users_ins ON auth.users;
DROP TRIGGER IF EXISTS gatehouse_count_users_del ON auth.users;
CREATE TRIGGER gatehouse_count_users_ins AFTER INSERT ON auth.users REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION auth.gatehouse_count_users();
CREATE TRIGGER gatehouse_count_users_del AFTER DELETE ON auth.users REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION auth.gatehouse_count_users();
BEGIN;
LOCK TABLE auth.users IN SHARE ROW EXCLUSIVE MODE;
DELETE FROM auth.gatehouse_row_counts WHERE tbl = 'users';
INSERT INTO auth.gatehouse_row_counts (tbl, part, shard, n) SELECT 'users', coalesce(aud, ''), 0, count(*) FROM auth.users GROUP BY 2;
COMMIT;
ANALYZE auth.users;
