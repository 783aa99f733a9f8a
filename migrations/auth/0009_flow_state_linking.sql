-- Manual identity linking (GET /user/identities/authorize) starts an OAuth flow for a user who is already signed in:
-- the flow remembers that user, in GoTrue's column, so its /callback adds the identity to them instead of signing in.

ALTER TABLE {{schema}}.{{prefix}}flow_state ADD COLUMN IF NOT EXISTS linking_target_id uuid NULL;
