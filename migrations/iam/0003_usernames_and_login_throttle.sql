-- Two changes to sign-in: usernames compared case-insensitively, and login throttling.
--
-- Usernames are compared case-insensitively from here on: IAMADMIN cannot be registered beside iamadmin, and
-- either spelling signs in (docs/iam.md). Each name is still stored as it was typed; the unique index on
-- lower(username) is what refuses a second spelling, and what AccountsRepo's lookups use.
--
-- A database may already hold names that differ only in case, which the index cannot be built over. Renaming or
-- merging accounts is not a decision a migration can make for their owners, so the start-up stops here, saying
-- how many names clash and how to list them; the operator renames all but one of each (or deletes the spares)
-- and starts again. Nothing has changed by then: the migration runs in one transaction.
DO $$
DECLARE
  clashing integer;
BEGIN
  SELECT count(*) INTO clashing FROM (
    SELECT lower(username) FROM {{schema}}.{{prefix}}users GROUP BY lower(username) HAVING count(*) > 1
  ) AS clashes;
  IF clashing > 0 THEN
    RAISE EXCEPTION '% username(s) in {{schema}}.{{prefix}}users belong to several accounts that differ only in case. Usernames are now compared case-insensitively: rename all but one account of each, then start again. To list them: SELECT id, username FROM {{schema}}.{{prefix}}users WHERE lower(username) IN (SELECT lower(username) FROM {{schema}}.{{prefix}}users GROUP BY 1 HAVING count(*) > 1) ORDER BY lower(username), id', clashing;
  END IF;
END
$$;

CREATE UNIQUE INDEX {{prefix}}users_username_lower_key ON {{schema}}.{{prefix}}users (lower(username));

-- Login throttling (docs/iam.md), in the database so that every instance counts the same failures. One row per
-- account that failed lately: `account` is user:<id>, or username:<lower-cased name> / email:<address> for a name
-- no account has (so unknown names are throttled exactly as known ones and tell a guesser nothing); `failures` in
-- a row; `blocked_until`, milliseconds since the epoch, when the next attempt may go ahead
-- (src/iam/domain/LoginBackoff.ts). Logged, unlike the auth product's rate_limits: a crash or a fail-over must not
-- hand a guesser a fresh set of attempts, and a login already costs a bcrypt verification, far more than a WAL
-- record.
CREATE TABLE {{schema}}.{{prefix}}login_failures (
  account text PRIMARY KEY,
  failures integer NOT NULL,
  blocked_until bigint NOT NULL
);
CREATE INDEX ON {{schema}}.{{prefix}}login_failures (blocked_until);

-- One row per client (the RATE_LIMIT_HEADER value, else the connection's address) that failed lately: its bucket
-- of failures as a theoretical arrival time in milliseconds since the epoch (src/platform/RequestRate.ts).
CREATE TABLE {{schema}}.{{prefix}}login_clients (
  client text PRIMARY KEY,
  tat bigint NOT NULL
);
CREATE INDEX ON {{schema}}.{{prefix}}login_clients (tat);
