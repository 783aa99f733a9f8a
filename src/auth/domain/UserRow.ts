/** A row of auth.users as the pg driver returns it (snake_case columns, timestamps as Date). */
export interface UserRow {
  readonly id: string
  readonly aud: string | null
  readonly role: string | null
  readonly email: string | null
  readonly encrypted_password: string | null
  readonly email_confirmed_at: Date | null
  readonly invited_at: Date | null
  readonly confirmation_token: string | null
  readonly confirmation_sent_at: Date | null
  readonly recovery_token: string | null
  readonly recovery_sent_at: Date | null
  readonly email_change_token_new: string | null
  readonly email_change: string | null
  readonly email_change_token_current: string | null
  readonly email_change_confirm_status: number | null
  readonly email_change_sent_at: Date | null
  readonly last_sign_in_at: Date | null
  readonly raw_app_meta_data: Record<string, unknown> | null
  readonly raw_user_meta_data: Record<string, unknown> | null
  readonly created_at: Date | null
  readonly updated_at: Date | null
  readonly phone: string | null
  readonly phone_confirmed_at: Date | null
  readonly phone_change: string | null
  readonly phone_change_token: string | null
  readonly phone_change_sent_at: Date | null
  readonly confirmed_at: Date | null
  readonly banned_until: Date | null
  readonly reauthentication_token: string | null
  readonly reauthentication_sent_at: Date | null
  readonly is_sso_user: boolean
  readonly deleted_at: Date | null
  readonly is_anonymous: boolean
}

export interface IdentityRow {
  readonly id: string
  readonly provider_id: string
  readonly user_id: string
  readonly identity_data: Record<string, unknown>
  readonly provider: string
  readonly last_sign_in_at: Date | null
  readonly created_at: Date | null
  readonly updated_at: Date | null
  readonly email: string | null
}

export const isBanned = (user: UserRow, now: Date): boolean =>
  user.banned_until !== null && user.banned_until.getTime() > now.getTime()
