-- GoTrue accepts a signed Web3 sign-in message (SIWE / SIWS) as often as it is posted while its Issued At is
-- within the maximum validity: whoever sees one (a proxy, a log, a shared screen) can sign in with it for ten
-- minutes. Gatehouse records each accepted message by digest (SHA-256 of the chain and the message, not of the
-- signature: one message has many valid signatures) until the message could no longer pass the time checks, and
-- refuses it a second time. A Gatehouse table of its own, so GoTrue's tables stay GoTrue's; swept once expired.

CREATE TABLE IF NOT EXISTS {{schema}}.{{prefix}}web3_used_messages (
  digest bytea PRIMARY KEY,
  expires_at timestamptz NOT NULL
);

CREATE INDEX IF NOT EXISTS {{prefix}}web3_used_messages_expires_at_idx ON {{schema}}.{{prefix}}web3_used_messages (expires_at);
