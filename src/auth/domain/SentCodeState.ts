import type * as Duration from "effect/Duration"
import { isLiveLink, type TokenKind } from "./LinkToken.js"
import type { UserRow } from "./UserRow.js"
import { isOtpExpired } from "./Verification.js"

/** The users columns a sent code's hash waits in, each with the column holding when it was sent. */
export const SENT_AT_OF_CODE = {
  confirmation_token: "confirmation_sent_at",
  recovery_token: "recovery_sent_at",
  email_change_token_new: "email_change_sent_at",
  email_change_token_current: "email_change_sent_at",
  phone_change_token: "phone_change_sent_at",
  reauthentication_token: "reauthentication_sent_at"
} as const

export type CodeColumn = keyof typeof SENT_AT_OF_CODE

/** The column each kind of pending token waits in. */
export const CODE_COLUMN_OF = {
  confirmation: "confirmation_token",
  recovery: "recovery_token",
  email_change_new: "email_change_token_new",
  email_change_current: "email_change_token_current",
  phone_change: "phone_change_token"
} as const satisfies Readonly<Record<TokenKind, CodeColumn>>

export const isCodeColumn = (column: string): column is CodeColumn => Object.hasOwn(SENT_AT_OF_CODE, column)

/** A code as a message carried it: where it waits, the hash it was stored as, when and for how long. */
export interface SentCode {
  readonly column: string
  readonly codeHash: string
  readonly sentAt: Date
  /** MAILER_OTP_EXP for a mail, SMS_OTP_EXP for a text. */
  readonly lifetime: Duration.Duration
}

/**
 * Whether a sent code still works, as /verify would judge it at `now`. Used once its column no longer holds the hash
 * it was stored as: verified, replaced by a newer message (a magic link replaces a recovery code), or cleared (too
 * many wrong guesses, a password change), or its user gone. Expired once its lifetime has passed since it was sent:
 * counted from the column's time while the code waits there, as /verify counts, else from the message's.
 */
export const sentCodeState = (
  code: SentCode,
  user: UserRow | undefined,
  now: Date
): { readonly used: boolean; readonly expired: boolean } => {
  const column = isCodeColumn(code.column) ? code.column : undefined
  const waiting = user !== undefined && column !== undefined && isLiveLink(user[column], code.codeHash)
  const sentAt = waiting ? user[SENT_AT_OF_CODE[column]] : code.sentAt
  return { used: !waiting, expired: isOtpExpired(sentAt, code.lifetime, now) }
}
