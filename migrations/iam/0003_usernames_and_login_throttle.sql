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
