-- Two-step verification (TOTP) for IAM accounts (docs/iam.md, "Two-step verification").
--
-- One TOTP factor per account. `secret` is base32, as an authenticator app reads it: it is answered once, by
-- EnrollTotp, and never again, and never logged. `verified_at` NULL: enrolled but not yet confirmed with a code, so
-- Login ignores it; set: Login asks for the second step. `last_step` is the RFC 6238 time step of the last code
-- accepted: a code is accepted only at a later step, so a code seen once cannot be replayed within its window, on
-- any instance (every code is judged with the factor's row locked). `failures` wrong codes since `failed_since`, over
-- every ticket and call: past AUTH_IAM_TOTP_MAX_FAILURES no code is compared until AUTH_IAM_TOTP_FAILURE_WINDOW ends.
CREATE TABLE {{schema}}.{{prefix}}totp_factors (
  user_id integer PRIMARY KEY REFERENCES {{schema}}.{{prefix}}users (id) ON DELETE CASCADE,
  secret text NOT NULL,
  verified_at timestamptz,
  last_step bigint,
  failures integer NOT NULL DEFAULT 0,
  failed_since timestamptz,
  created_at timestamptz NOT NULL
);

-- A password sign-in of an account with an active factor, waiting for its code. Only the SHA-256 digest of the ticket
-- is kept (the ticket is a bearer secret). A ticket is deleted when it is redeemed, when it has taken
-- AUTH_IAM_LOGIN_TICKET_ATTEMPTS wrong codes, and once expired (swept).
CREATE TABLE {{schema}}.{{prefix}}login_tickets (
  ticket_hash text PRIMARY KEY,
  user_id integer NOT NULL REFERENCES {{schema}}.{{prefix}}users (id) ON DELETE CASCADE,
  expires_at timestamptz NOT NULL,
  failures integer NOT NULL DEFAULT 0
);
CREATE INDEX ON {{schema}}.{{prefix}}login_tickets (expires_at);
CREATE INDEX ON {{schema}}.{{prefix}}login_tickets (user_id);
