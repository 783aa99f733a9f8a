-- GoTrue accepts a TOTP code again on a new challenge while the code is still within its ±1 step: whoever saw it
-- (over a shoulder, in a phishing proxy) can raise a session with it. Gatehouse keeps the step of the last code it
-- accepted for each factor and refuses a code of that step or an earlier one, on Gatehouse's own table so
-- mfa_factors stays GoTrue's.

ALTER TABLE {{schema}}.{{prefix}}mfa_factor_attempts ADD COLUMN IF NOT EXISTS last_totp_step bigint;
