import { qualifiedTables } from "../platform/sql/Tables.js"

/** Qualified names of the auth server's tables under DB_NAMESPACE, by GoTrue's table names. */
export type AuthTables = ReturnType<typeof authTables>

export const authTables = (namespace: string) =>
  qualifiedTables("auth", namespace, ["users", "identities", "sessions", "refresh_tokens", "mfa_amr_claims", "otp_attempts", "flow_state", "send_quotas", "recipient_sends", "audit_log_entries", "oauth_client_states", "rate_limits", "pending_tokens", "one_time_tokens", "outbox", "gatehouse_migrations", "mfa_factors", "mfa_challenges", "mfa_factor_attempts", "webauthn_credentials", "webauthn_challenges", "web3_used_messages", "oauth_clients", "oauth_authorizations", "oauth_consents", "sso_providers", "sso_domains", "saml_providers", "saml_relay_states", "saml_used_assertions", "gatehouse_row_counts", "gatehouse_ended_sessions"])
