-- GET /admin/users and GET /admin/audit at any size (issue 30): an exact X-Total-Count without count(*) over the
-- table, and pages read from whichever end of an ordered index is nearer.
--
-- gatehouse_row_counts holds, per table and part (users: the audience; audit_log_entries: ''), counts whose sum is
-- the table's row count. Triggers keep it in the writer's transaction, so the sum is exact in every snapshot, and
-- GoTrue's writes (the way back), COPY and hand-written SQL fire them too. Each backend adds to a row of its own
-- (shard = pg_backend_pid()): no two open transactions ever write the same row, so triggers never wait for each
-- other and cannot deadlock, whatever order a writer touches users and audit_log_entries in. Shard 0 holds the
-- backfill and whatever gatehouse_fold_row_counts() folds in (the rows of backends that have gone); the sum over a
-- part reads a few dozen rows.
--
-- The trigger functions are SECURITY DEFINER (with a fixed search_path): a role that may write users but was never
-- granted the count table (GoTrue's, a dashboard's) still writes. Dropping the count table breaks every write to
-- users and audit_log_entries: drop the functions with CASCADE instead, which takes the triggers with them.
-- Rows with a NULL aud are not counted: no list shows them.

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}gatehouse_row_counts (
  tbl text NOT NULL,
  part text NOT NULL,
  shard integer NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (tbl, part, shard)
);

-- Statement-level: one upsert per writing statement, over its transition table. PostgreSQL allows a transition
-- table only on a single-event trigger, hence one trigger per event.
CREATE OR REPLACE FUNCTION {{schema}}.{{prefix}}gatehouse_count_users() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO {{schema}}.{{prefix}}gatehouse_row_counts AS c (tbl, part, shard, n)
      SELECT 'users', r.aud, pg_backend_pid(), count(*) FROM new_rows r WHERE r.aud IS NOT NULL GROUP BY r.aud
      ON CONFLICT (tbl, part, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO {{schema}}.{{prefix}}gatehouse_row_counts AS c (tbl, part, shard, n)
      SELECT 'users', r.aud, pg_backend_pid(), -count(*) FROM old_rows r WHERE r.aud IS NOT NULL GROUP BY r.aud
      ON CONFLICT (tbl, part, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
  ELSIF TG_OP = 'TRUNCATE' THEN
    DELETE FROM {{schema}}.{{prefix}}gatehouse_row_counts WHERE tbl = 'users';
  END IF;
  RETURN NULL;
END $$;

-- Row-level, only when aud changes (an UPDATE OF trigger may not have transition tables): the sign-in stamps and
-- every other update never call it.
CREATE OR REPLACE FUNCTION {{schema}}.{{prefix}}gatehouse_count_users_aud() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  INSERT INTO {{schema}}.{{prefix}}gatehouse_row_counts AS c (tbl, part, shard, n)
    SELECT 'users', moved.aud, pg_backend_pid(), moved.n
    FROM (VALUES (OLD.aud, -1), (NEW.aud, 1)) AS moved (aud, n) WHERE moved.aud IS NOT NULL
    ON CONFLICT (tbl, part, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION {{schema}}.{{prefix}}gatehouse_count_audit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO {{schema}}.{{prefix}}gatehouse_row_counts AS c (tbl, part, shard, n)
      SELECT 'audit_log_entries', '', pg_backend_pid(), count(*) FROM new_rows HAVING count(*) > 0
      ON CONFLICT (tbl, part, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO {{schema}}.{{prefix}}gatehouse_row_counts AS c (tbl, part, shard, n)
      SELECT 'audit_log_entries', '', pg_backend_pid(), -count(*) FROM old_rows HAVING count(*) > 0
      ON CONFLICT (tbl, part, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
  ELSIF TG_OP = 'TRUNCATE' THEN
    DELETE FROM {{schema}}.{{prefix}}gatehouse_row_counts WHERE tbl = 'audit_log_entries';
  END IF;
  RETURN NULL;
END $$;

-- Folds the rows of backends that are gone into shard 0, skipping rows an open transaction holds (so it never waits
-- for a writer, and a live backend's writes never wait for it, unless a new backend took a gone one's pid in the
-- instant between). For a periodic job (housekeeping): the sums stay exact either way, this keeps the rows few.
CREATE OR REPLACE FUNCTION {{schema}}.{{prefix}}gatehouse_fold_row_counts() RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  WITH taken AS (
    DELETE FROM {{schema}}.{{prefix}}gatehouse_row_counts
    WHERE ctid IN (SELECT ctid FROM {{schema}}.{{prefix}}gatehouse_row_counts
                   WHERE shard <> 0 AND shard NOT IN (SELECT pid FROM pg_catalog.pg_stat_activity WHERE pid IS NOT NULL)
                   FOR UPDATE SKIP LOCKED)
    RETURNING tbl, part, n
  )
  INSERT INTO {{schema}}.{{prefix}}gatehouse_row_counts AS c (tbl, part, shard, n)
    SELECT tbl, part, 0, sum(n) FROM taken GROUP BY tbl, part
    ON CONFLICT (tbl, part, shard) DO UPDATE SET n = c.n + EXCLUDED.n
$$;

-- Writers wait here until this migration commits; the counts below then see every row written before, and the
-- triggers every row written after.
LOCK TABLE {{schema}}.{{prefix}}users, {{schema}}.{{prefix}}audit_log_entries IN SHARE ROW EXCLUSIVE MODE;

DROP TRIGGER IF EXISTS gatehouse_count_ins ON {{schema}}.{{prefix}}users;
DROP TRIGGER IF EXISTS gatehouse_count_del ON {{schema}}.{{prefix}}users;
DROP TRIGGER IF EXISTS gatehouse_count_aud ON {{schema}}.{{prefix}}users;
DROP TRIGGER IF EXISTS gatehouse_count_truncate ON {{schema}}.{{prefix}}users;
CREATE TRIGGER gatehouse_count_ins AFTER INSERT ON {{schema}}.{{prefix}}users REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.{{prefix}}gatehouse_count_users();
CREATE TRIGGER gatehouse_count_del AFTER DELETE ON {{schema}}.{{prefix}}users REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.{{prefix}}gatehouse_count_users();
CREATE TRIGGER gatehouse_count_aud AFTER UPDATE OF aud ON {{schema}}.{{prefix}}users
  FOR EACH ROW WHEN (OLD.aud IS DISTINCT FROM NEW.aud) EXECUTE FUNCTION {{schema}}.{{prefix}}gatehouse_count_users_aud();
CREATE TRIGGER gatehouse_count_truncate AFTER TRUNCATE ON {{schema}}.{{prefix}}users
  FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.{{prefix}}gatehouse_count_users();

DROP TRIGGER IF EXISTS gatehouse_count_ins ON {{schema}}.{{prefix}}audit_log_entries;
DROP TRIGGER IF EXISTS gatehouse_count_del ON {{schema}}.{{prefix}}audit_log_entries;
DROP TRIGGER IF EXISTS gatehouse_count_truncate ON {{schema}}.{{prefix}}audit_log_entries;
CREATE TRIGGER gatehouse_count_ins AFTER INSERT ON {{schema}}.{{prefix}}audit_log_entries REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.{{prefix}}gatehouse_count_audit();
CREATE TRIGGER gatehouse_count_del AFTER DELETE ON {{schema}}.{{prefix}}audit_log_entries REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.{{prefix}}gatehouse_count_audit();
CREATE TRIGGER gatehouse_count_truncate AFTER TRUNCATE ON {{schema}}.{{prefix}}audit_log_entries
  FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.{{prefix}}gatehouse_count_audit();

DELETE FROM {{schema}}.{{prefix}}gatehouse_row_counts WHERE tbl IN ('users', 'audit_log_entries');
INSERT INTO {{schema}}.{{prefix}}gatehouse_row_counts (tbl, part, shard, n)
  SELECT 'users', aud, 0, count(*) FROM {{schema}}.{{prefix}}users WHERE aud IS NOT NULL GROUP BY aud;
INSERT INTO {{schema}}.{{prefix}}gatehouse_row_counts (tbl, part, shard, n)
  SELECT 'audit_log_entries', '', 0, count(*) FROM {{schema}}.{{prefix}}audit_log_entries HAVING count(*) > 0;

-- The admin list's order within an audience, readable from either end (audit_log_entries has its (created_at, id)).
CREATE INDEX IF NOT EXISTS {{prefix}}users_aud_created_at_id_idx
  ON {{schema}}.{{prefix}}users (aud, created_at DESC, id DESC);

-- Substring filters (ILIKE '%…%') through trigram indexes, when pg_trgm can be had: it is a trusted extension
-- (PostgreSQL 13+), so a database owner may create it; Supabase keeps it in schema extensions. Without it the
-- filters still answer, by scanning, and Gatehouse says so at start-up.
DO $$
DECLARE
  ops text;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_opclass WHERE opcname = 'gin_trgm_ops') THEN
    BEGIN
      CREATE EXTENSION IF NOT EXISTS pg_trgm;
    EXCEPTION WHEN OTHERS THEN
      RAISE NOTICE 'pg_trgm is not available (%): the admin list and audit filters will scan', SQLERRM;
    END;
  END IF;
  SELECT quote_ident(n.nspname) || '.gin_trgm_ops' INTO ops
    FROM pg_catalog.pg_opclass c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.opcnamespace
    JOIN pg_catalog.pg_am a ON a.oid = c.opcmethod
    WHERE c.opcname = 'gin_trgm_ops' AND a.amname = 'gin' AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')
    LIMIT 1;
  IF ops IS NULL THEN
    RETURN;
  END IF;
  -- Whatever stops an index here (a schema this role may not use, a privilege) leaves the filters scanning, which
  -- start-up reports; it must not stop the migration, and with it the server.
  BEGIN
  EXECUTE format('CREATE INDEX IF NOT EXISTS {{prefix}}users_email_trgm_idx ON {{schema}}.{{prefix}}users USING gin (email %s)', ops);
  EXECUTE format('CREATE INDEX IF NOT EXISTS {{prefix}}users_phone_trgm_idx ON {{schema}}.{{prefix}}users USING gin (phone %s)', ops);
  EXECUTE format('CREATE INDEX IF NOT EXISTS {{prefix}}users_full_name_trgm_idx ON {{schema}}.{{prefix}}users '
    'USING gin ((raw_user_meta_data ->> ''full_name'') %s)', ops);
  EXECUTE format('CREATE INDEX IF NOT EXISTS {{prefix}}audit_log_entries_actor_username_trgm_idx '
    'ON {{schema}}.{{prefix}}audit_log_entries USING gin ((payload ->> ''actor_username'') %s)', ops);
  EXECUTE format('CREATE INDEX IF NOT EXISTS {{prefix}}audit_log_entries_actor_name_trgm_idx '
    'ON {{schema}}.{{prefix}}audit_log_entries USING gin ((payload ->> ''actor_name'') %s)', ops);
  EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'trigram indexes not created (%): the admin list and audit filters will scan', SQLERRM;
  END;
END $$;
