-- GoTrue's index for its cleanup of flow_state (migration 20230508135423), under GoTrue's name: the periodic sweep
-- that drops flows started more than a day ago finds them by created_at. oauth_client_states has its own index since
-- 0007.

CREATE INDEX IF NOT EXISTS {{prefix}}flow_state_created_at_idx ON {{schema}}.{{prefix}}flow_state (created_at DESC);
