-- Housekeeping (plan §3): the indexes its sweeps walk, and its own small table. Only indexes on GoTrue's tables, so
-- GoTrue reads and writes them as before; the table is Gatehouse's own.
--
-- gatehouse_housekeeping: one row per sweep task. `resume_after` is where an unfinished pass goes on (a refresh-token id,
-- a session id; NULL between passes); `last_run` when its last pass finished, so a task runs only when due, on
-- whichever instance takes the housekeeping lock.
--
-- refresh_tokens and sessions need no new index: their sweeps walk the primary keys in ranges from resume_after (the
-- parent check uses refresh_tokens_parent_idx), and expired sessions are found through sessions_not_after_idx. Audit
-- entries are found through audit_log_entries_created_at_idx.

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}gatehouse_housekeeping (
  task text PRIMARY KEY,
  resume_after text NULL,
  last_run timestamptz NULL
);

CREATE INDEX IF NOT EXISTS {{prefix}}one_time_tokens_created_at_idx ON {{schema}}.{{prefix}}one_time_tokens (created_at);
CREATE INDEX IF NOT EXISTS {{prefix}}pending_tokens_created_at_idx ON {{schema}}.{{prefix}}pending_tokens (created_at);
CREATE INDEX IF NOT EXISTS {{prefix}}otp_attempts_updated_at_idx ON {{schema}}.{{prefix}}otp_attempts (updated_at);
