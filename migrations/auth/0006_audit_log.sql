-- GoTrue's audit_log_entries, column for column, so a database GoTrue created first (and tools that read its
-- audit log) keep working. payload is json, not jsonb, as in GoTrue. The ip_address column came later in GoTrue,
-- so it is added separately for a table that predates it. The created_at index serves GET /admin/audit, which
-- pages newest first.

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}audit_log_entries (
  instance_id uuid NULL,
  id uuid NOT NULL PRIMARY KEY,
  payload json NULL,
  created_at timestamptz NULL
);

ALTER TABLE {{schema}}.{{prefix}}audit_log_entries ADD COLUMN IF NOT EXISTS ip_address varchar(64) NOT NULL DEFAULT '';

CREATE INDEX IF NOT EXISTS {{prefix}}audit_logs_instance_id_idx ON {{schema}}.{{prefix}}audit_log_entries (instance_id);
CREATE INDEX IF NOT EXISTS {{prefix}}audit_log_entries_created_at_idx ON {{schema}}.{{prefix}}audit_log_entries (created_at, id);
