import * as Data from "effect/Data"
import * as Either from "effect/Either"
import { AuthError } from "./AuthError.js"

/**
 * GoTrue's password rules (`internal/api/password.go` `checkPasswordStrength`, reference/gotrue-wire.md §8),
 * without the HaveIBeenPwned lookup, which is I/O and belongs to a service.
 */
export interface PasswordPolicy {
  readonly minLength: number
  readonly requiredCharacters: ReadonlyArray<string>
}

export type WeakPasswordReason = "length" | "characters"

export type PasswordCheck = Data.TaggedEnum<{
  Ok: {}
  TooLong: {}
  Weak: { readonly reasons: ReadonlyArray<WeakPasswordReason>; readonly message: string }
}>

export const PasswordCheck = Data.taggedEnum<PasswordCheck>()

/** bcrypt ignores everything after 72 bytes, so a longer password would not mean what its owner typed. */
export const MAX_PASSWORD_BYTES = 72

/** GoTrue says "characters" although it counts bytes; clients match on this text, so it stays verbatim. */
export const passwordTooLongMessage = "Password cannot be longer than 72 characters"

export const minimumLengthMessage = (minLength: number): string =>
  `Password should be at least ${minLength} characters.`

/** GoTrue lists every configured set, not only the missing ones, so the message does not depend on the password. */
export const requiresCharactersMessage = (requiredCharacters: ReadonlyArray<string>): string =>
  `Password should contain at least one character of each: ${requiredCharacters.join(", ")}.`

/**
 * The 72-byte limit wins over every other rule: such a password is refused outright (400), never reported as
 * weak (422).
 *
 * The minimum length counts Unicode code points, where GoTrue's `len()` counts UTF-8 bytes. The message
 * promises "characters", and a password of three accented letters should not pass a minimum of six; for
 * ASCII passwords the two counts agree.
 */
export const checkPassword = (password: string, policy: PasswordPolicy): PasswordCheck => {
  const { bytes, codePoints } = measure(password)
  if (bytes > MAX_PASSWORD_BYTES) return PasswordCheck.TooLong()

  const reasons: Array<WeakPasswordReason> = []
  const messages: Array<string> = []
  if (codePoints < policy.minLength) {
    reasons.push("length")
    messages.push(minimumLengthMessage(policy.minLength))
  }
  // An empty set could never be satisfied; GoTrue skips it rather than rejecting every password.
  if (policy.requiredCharacters.some((set) => set !== "" && !containsAny(password, set))) {
    reasons.push("characters")
    messages.push(requiresCharactersMessage(policy.requiredCharacters))
  }
  return reasons.length === 0 ? PasswordCheck.Ok() : PasswordCheck.Weak({ reasons, message: messages.join(" ") })
}

// A lone surrogate counts as 3 bytes: JSON decoding (ours and Go's) turns it into U+FFFD, which is 3 bytes.
const measure = (password: string): { readonly bytes: number; readonly codePoints: number } => {
  let bytes = 0
  let codePoints = 0
  for (const char of password) {
    const cp = char.codePointAt(0)!
    bytes += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4
    codePoints++
  }
  return { bytes, codePoints }
}

// Compares code points, as Go's strings.ContainsAny does, so a set may hold characters outside the BMP.
const containsAny = (password: string, set: string): boolean => {
  const members = new Set(set)
  for (const char of password) {
    if (members.has(char)) return true
  }
  return false
}

/** Password policy failures as GoTrue reports them: too long is a 400, weak is a 422 with reasons. */
export const enforcePasswordPolicy = (
  password: string,
  policy: PasswordPolicy
): Either.Either<void, AuthError> => {
  const check = checkPassword(password, policy)
  switch (check._tag) {
    case "Ok":
      return Either.void
    case "TooLong":
      return Either.left(AuthError.validation(passwordTooLongMessage))
    case "Weak":
      return Either.left(new AuthError({ status: 422, code: "weak_password", message: check.message, reasons: check.reasons }))
  }
}
