-- Gatehouse's own OAuth browser binding (SECURITY_OAUTH_BROWSER_BINDING_ENABLED): an OAuth flow remembers the digest of
-- the browser-binding cookie of the browser that started it, and /callback claims it only with that cookie. A manual
-- linking flow is started by an API call that cannot set the browser's cookie; it waits, unbound, with the provider
-- URL it leads to, until the browser opens /authorize/continue, which binds it and sends the browser on. Nullable
-- columns GoTrue's own code never reads.

ALTER TABLE {{schema}}.{{prefix}}flow_state ADD COLUMN IF NOT EXISTS browser_binding text NULL;
ALTER TABLE {{schema}}.{{prefix}}flow_state ADD COLUMN IF NOT EXISTS provider_authorize_url text NULL;
