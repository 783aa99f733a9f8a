import * as Either from "effect/Either"
import * as Option from "effect/Option"

/** GoTrue's `validateEmail` messages (`internal/api/mail.go`), all 400 `validation_failed`. */
export const emailRequiredMessage = "An email address is required"
export const emailTooLongMessage = "An email address is too long"
export const invalidEmailFormatMessage = "Unable to validate email address: invalid format"

/** The width of `auth.users.email` (varchar(255)). */
export const MAX_EMAIL_LENGTH = 255

export type EmailProblem = "Required" | "TooLong" | "InvalidFormat"

export const emailProblemMessage: Readonly<Record<EmailProblem, string>> = {
  Required: emailRequiredMessage,
  TooLong: emailTooLongMessage,
  InvalidFormat: invalidEmailFormatMessage
}

// The local part is an RFC 5322 dot-atom, so no leading, trailing or doubled dots. GoTrue's checkmail regex
// allows those, but mail servers refuse them, so such an address could never be confirmed anyway.
// The domain follows checkmail exactly: LDH labels of at most 63 characters, no edge hyphens, and a single
// label (user@localhost) is allowed.
const ATEXT = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
const LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
/**
 * The address format parseEmail accepts (after trimming), as a regular expression's source: the contract documents
 * it. The local part is at most 64 characters (RFC 5321): a longer one cannot be delivered, and an invitation or
 * email change to it would fail at the mail server instead of being refused here. (A negative lookahead, not a
 * positive one: a test generator can produce strings for it.)
 */
export const EMAIL_PATTERN = `^(?![^@]{65})${ATEXT}+(?:\\.${ATEXT}+)*@${LABEL}(?:\\.${LABEL})*$`
const EMAIL = new RegExp(EMAIL_PATTERN)

/**
 * Validates and canonicalizes an address the way it is stored and looked up: trimmed and lower-cased.
 *
 * Trimming is a leniency GoTrue does not have (it rejects " a@b.co"); a pasted trailing space is not a
 * different address. The format is checked before lower-casing because `toLowerCase` maps some non-ASCII
 * letters (the Kelvin sign) onto ASCII ones, which would let an invalid input through as a valid one.
 * Only ASCII passes the format check, so the length in UTF-16 units equals GoTrue's length in bytes
 * whenever the address is otherwise valid.
 */
export const parseEmail = (input: string): Either.Either<string, EmailProblem> => {
  const email = input.trim()
  if (email === "") return Either.left("Required")
  if (email.length > MAX_EMAIL_LENGTH) return Either.left("TooLong")
  if (!EMAIL.test(email)) return Either.left("InvalidFormat")
  return Either.right(email.toLowerCase())
}

export const normalizeEmail = (input: string): Option.Option<string> => Either.getRight(parseEmail(input))
