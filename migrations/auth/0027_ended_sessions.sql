-- The revocation feed (GET /admin/revoked-sessions, issue 31): every session that ends, however it ends, so that an
-- API gateway which checks access tokens by their signature alone can refuse the tokens of sessions ended before
-- those tokens expire.
--
-- gatehouse_ended_sessions: one row per ended session. A statement-level trigger on sessions writes it from the
-- deleting statement's transition table, so every way a session ends is caught: a logout of any scope, refresh-token
-- reuse, a ban, a new password, an admin's user delete (its ON DELETE CASCADE fires the trigger too), housekeeping's
-- sweeps, and GoTrue's own deletes on a database it shares or goes back to. The table is Gatehouse's own; GoTrue
-- never reads it.
--
-- `xid` is the ending transaction's id. The feed pages by (xid, session_id) and lists only rows of transactions older
-- than the reader's snapshot xmin: those have all committed or rolled back, so no later commit can slip a row in
-- behind a cursor already handed out (ended_at, the transaction's time, can: a transaction that began earlier may
-- commit later). xid8 does not wrap around.
--
-- The function is SECURITY DEFINER (with a fixed search_path), as 0024's are: a role that may delete sessions but was
-- never granted this table (GoTrue's) still deletes. Dropping the table breaks every delete of a session: drop the
-- function with CASCADE instead, which takes the trigger with it. Rows are kept only while an access token of the
-- session could still be valid: housekeeping deletes those older than JWT_EXP plus a margin.

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}gatehouse_ended_sessions (
  xid xid8 NOT NULL,
  session_id uuid NOT NULL,
  user_id uuid NOT NULL,
  ended_at timestamptz NOT NULL,
  PRIMARY KEY (xid, session_id)
);
CREATE INDEX IF NOT EXISTS {{prefix}}gatehouse_ended_sessions_ended_at_idx
  ON {{schema}}.{{prefix}}gatehouse_ended_sessions (ended_at);

CREATE OR REPLACE FUNCTION {{schema}}.{{prefix}}gatehouse_record_ended_sessions() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  INSERT INTO {{schema}}.{{prefix}}gatehouse_ended_sessions (xid, session_id, user_id, ended_at)
    SELECT pg_current_xact_id(), r.id, r.user_id, now() FROM old_rows r
    ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS gatehouse_ended_sessions ON {{schema}}.{{prefix}}sessions;
CREATE TRIGGER gatehouse_ended_sessions AFTER DELETE ON {{schema}}.{{prefix}}sessions REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.{{prefix}}gatehouse_record_ended_sessions();
