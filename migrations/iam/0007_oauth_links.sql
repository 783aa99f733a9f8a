-- OAuth2 sign-in signs in only accounts that linked the provider identity themselves (docs/iam.md, "OAuth2 sign-in").
--
-- Until this migration a provider's verified email alone signed in the IAM account registered with that email. But
-- Register takes an email on the caller's word and IAM never verifies it: anyone could register a victim's address
-- first, with a password of their own, and the victim's later sign-in through a provider landed in the squatter's
-- account (a pre-account takeover). Now:
--
-- oauth_links: (provider, the provider's subject) -> the account. A row is written only by a link flow, one an
-- account's holder started while signed in (StartOAuthSignIn with the account's access token), and only when the
-- provider verified the account's email. A sign-in flow (no credentials) signs in the linked account, never one found
-- by email. The subject, not the email, names the identity: it never changes at the provider.
--
-- oauth_flows.link_user_id: the account a link flow is for; NULL for a sign-in flow. Flows started before this
-- migration are sign-in flows.
CREATE TABLE {{schema}}.{{prefix}}oauth_links (
  provider text NOT NULL,
  subject text NOT NULL,
  user_id integer NOT NULL REFERENCES {{schema}}.{{prefix}}users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (provider, subject)
);
CREATE INDEX ON {{schema}}.{{prefix}}oauth_links (user_id);

ALTER TABLE {{schema}}.{{prefix}}oauth_flows
  ADD COLUMN link_user_id integer REFERENCES {{schema}}.{{prefix}}users (id) ON DELETE CASCADE;
