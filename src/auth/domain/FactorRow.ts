/** The kinds of second factor GoTrue knows (its factor_type enum). */
export const FACTOR_TYPES = ["totp", "phone", "webauthn"] as const
export type FactorType = (typeof FACTOR_TYPES)[number]

export type FactorStatus = "unverified" | "verified"

/**
 * An mfa_factors row as every reader but verification sees it: the TOTP secret and the stored WebAuthn credential
 * are left out, so they cannot reach a response by accident (FactorsRepo reads them only where a code or an
 * assertion is checked).
 */
export interface FactorRow {
  readonly id: string
  readonly user_id: string
  readonly friendly_name: string | null
  readonly factor_type: FactorType
  readonly status: FactorStatus
  readonly created_at: Date
  readonly updated_at: Date
  /** E.164 digits without "+", for phone factors. */
  readonly phone: string | null
  readonly last_challenged_at: Date | null
  readonly web_authn_aaguid: string | null
  readonly last_webauthn_challenge_data: unknown
}
