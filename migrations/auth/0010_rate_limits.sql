-- Per-client request rates (RATE_LIMIT_OTP, RATE_LIMIT_TOKEN_REFRESH, RATE_LIMIT_VERIFY, RATE_LIMIT_ANONYMOUS_USERS):
-- one row per limited route and client key (the RATE_LIMIT_HEADER value), holding the bucket's theoretical arrival
-- time in milliseconds since the epoch (GCRA; see src/auth/domain/RequestRate.ts). GoTrue keeps these buckets in
-- process memory, so N instances allow N times the rate; here every instance admits through one conditional upsert
-- on this row. A row whose time has passed is a full bucket, the same as no row, and is swept periodically.
--
-- UNLOGGED: every limited request writes here, and the rows are worth nothing after a crash (an emptied table only
-- means full buckets), so they are kept out of the WAL.

CREATE UNLOGGED TABLE IF NOT EXISTS {{schema}}.{{prefix}}rate_limits (
  route text NOT NULL,
  key text NOT NULL,
  tat bigint NOT NULL,
  PRIMARY KEY (route, key)
);
