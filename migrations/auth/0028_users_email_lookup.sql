-- Looking a user up by address at any size (issue 30). Sign-up, password sign-in, recovery, OTP, invite, resend and
-- the "address taken?" checks ask `lower(email) = $1` without an instance_id; GoTrue's only index on the address is
-- (instance_id, lower(email)), whose leading column those statements do not name, so PostgreSQL walked the whole
-- index: 15-49 ms per sign-up at 300,000 users, against 0.1 ms with this index. The statements keep their meaning
-- (rows of any instance_id, as before) rather than adding GoTrue's `instance_id = '00000000-…'`.
--
-- The email_change index is partial: only users with a change pending have one, and the pending-change lookup
-- (resend and verify of an email change) asks for `email_change <> ''`.
--
-- GoTrue ignores both indexes. On a database adopted with many users, this migration builds them under a SHARE lock
-- (writes to users wait while it runs: a few seconds at a million users).

CREATE INDEX IF NOT EXISTS {{prefix}}users_lower_email_idx ON {{schema}}.{{prefix}}users (lower(email));
CREATE INDEX IF NOT EXISTS {{prefix}}users_lower_email_change_idx ON {{schema}}.{{prefix}}users (lower(email_change))
  WHERE email_change IS NOT NULL AND email_change <> '';
