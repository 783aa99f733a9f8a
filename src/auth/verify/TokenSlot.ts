import type * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import { CODE_COLUMN_OF, SENT_AT_OF_CODE } from "../domain/SentCodeState.js"
import type { TokenKind } from "../domain/LinkToken.js"
import { matchesOtp } from "../domain/OtpToken.js"
import { withoutPkcePrefix } from "../domain/Pkce.js"
import type { UserRow } from "../domain/UserRow.js"
import type { VerifyRequest } from "../domain/Verification.js"
import type { TokenColumn, UserPatch } from "../users/UsersRepo.js"

/*
 * Which of a user's pending tokens a verification is aimed at, and what a miss clears: pure rules over the locked
 * user row, so Verify's transaction only orchestrates them.
 */

/** One of a user's pending tokens: where it is stored, whom it was sent to, and how long it lasts. */
export interface Slot {
  readonly kind: TokenKind
  readonly column: TokenColumn
  readonly stored: string | null
  readonly recipient: string
  readonly sentAt: Date | null
  readonly validity: Duration.Duration
}

/** How long a token lasts: a mailed one MAILER_OTP_EXP, a texted one SMS_OTP_EXP. */
export interface Validity {
  readonly mail: Duration.Duration
  readonly text: Duration.Duration
}

const slotOf = (validity: Validity) => (user: UserRow, kind: TokenKind, recipient: string, texted: boolean): Slot => ({
  kind,
  column: CODE_COLUMN_OF[kind],
  stored: user[CODE_COLUMN_OF[kind]],
  recipient,
  sentAt: user[SENT_AT_OF_CODE[CODE_COLUMN_OF[kind]]],
  validity: texted ? validity.text : validity.mail
})

/**
 * What a fifth wrong code clears. An email change goes whole: clearing one half would leave the other to apply the
 * change alone, and so let a guesser skip the confirmation they cannot give.
 */
export const invalidation = (slot: Slot): UserPatch =>
  slot.kind === "email_change_new" || slot.kind === "email_change_current"
    ? { email_change: "", email_change_token_new: "", email_change_token_current: "", email_change_confirm_status: 0 }
    : { [slot.column]: "" }

const lower = (value: string | null): string => (value ?? "").toLowerCase()

/** A typed code matches its hash whether the token was stored for an implicit or a PKCE flow (GoTrue's isOtpValid). */
export const matchesCode = (stored: string | null, recipient: string, token: string): boolean =>
  matchesOtp(withoutPkcePrefix(stored), recipient, token)

/**
 * The token a typed code is aimed at, from the address it comes with. An `email` code is whichever emailed token
 * its hash matches, else the confirmation (so it is counted); a code must fit the kind of user (an email type
 * needs an email user, texted codes a phone).
 */
export const codeSlot = (validity: Validity, user: UserRow, request: Extract<VerifyRequest, { _tag: "Code" }>): Option.Option<Slot> => {
  const slot = slotOf(validity)
  const email = request.recipient._tag === "Email" ? request.recipient.email : undefined
  const phone = request.recipient._tag === "Phone" ? request.recipient.phone : undefined
  const hasEmail = (user.email ?? "") !== ""
  switch (request.type) {
    // An invitation's code is stored where a sign-up's is (GoTrue's signupVerify serves both).
    case "signup":
    case "invite":
      return email !== undefined && hasEmail ? Option.some(slot(user, "confirmation", user.email!, false)) : Option.none()
    case "recovery":
    case "magiclink":
      return email !== undefined && hasEmail ? Option.some(slot(user, "recovery", user.email!, false)) : Option.none()
    case "email":
      if (email === undefined || !hasEmail) return Option.none()
      return Option.some(slot(user, matchesCode(user.recovery_token, user.email!, request.token) ? "recovery" : "confirmation", user.email!, false))
    case "sms":
      return phone !== undefined && (user.phone ?? "") !== "" ? Option.some(slot(user, "confirmation", user.phone!, true)) : Option.none()
    case "email_change":
      return email === undefined
        ? Option.none()
        : email === lower(user.email_change)
        ? Option.some(slot(user, "email_change_new", user.email_change ?? "", false))
        : email === lower(user.email)
        ? Option.some(slot(user, "email_change_current", user.email ?? "", false))
        : Option.none()
    case "phone_change":
      return phone !== undefined ? Option.some(slot(user, "phone_change", user.phone_change ?? "", true)) : Option.none()
  }
}

/** The token a link names: links are mailed, so the address it went to must still be there. */
export const linkSlot = (validity: Validity, user: UserRow, kind: TokenKind): Option.Option<Slot> => {
  const slot = slotOf(validity)
  switch (kind) {
    case "confirmation":
    case "recovery":
      return (user.email ?? "") !== "" ? Option.some(slot(user, kind, user.email!, false)) : Option.none()
    case "email_change_new":
      return (user.email_change ?? "") !== "" ? Option.some(slot(user, kind, user.email_change!, false)) : Option.none()
    case "email_change_current":
      return (user.email_change ?? "") !== "" ? Option.some(slot(user, kind, user.email ?? "", false)) : Option.none()
    case "phone_change":
      return (user.phone_change ?? "") !== "" ? Option.some(slot(user, kind, user.phone_change!, true)) : Option.none()
  }
}

/**
 * Secure email change (reference §2.12): a user with an address confirms from both, in either order, and the
 * first confirmation only waits for the second. Without it (MAILER_SECURE_EMAIL_CHANGE_ENABLED=false) the new
 * address's confirmation applies the change alone.
 */
export const isFirstOfTwo = (user: UserRow, request: VerifyRequest, secureEmailChange: boolean): boolean =>
  request.type === "email_change" && secureEmailChange && (user.email_change_confirm_status ?? 0) === 0 &&
  (user.email ?? "") !== ""
