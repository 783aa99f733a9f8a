import { tablePrefix } from "../platform/Migrator.js"

/** Qualified names of the auth server's tables under DB_NAMESPACE. */
export interface AuthTables {
  readonly users: string
  readonly identities: string
  readonly sessions: string
  readonly refreshTokens: string
  readonly amrClaims: string
}

export const authTables = (namespace: string): AuthTables => {
  const prefix = `auth.${tablePrefix(namespace)}`
  return {
    users: `${prefix}users`,
    identities: `${prefix}identities`,
    sessions: `${prefix}sessions`,
    refreshTokens: `${prefix}refresh_tokens`,
    amrClaims: `${prefix}mfa_amr_claims`
  }
}
