import * as Option from "effect/Option"

/** GoTrue's message for a number that is not E.164 after formatting (`internal/api/phone.go` `validatePhone`). */
export const invalidPhoneMessage = "Invalid phone number format (E.164 required)"

const E164 = /^[1-9][0-9]{1,14}$/

/** The numbers normalizePhone accepts, written without spaces: E.164 digits, with or without the `+`. */
export const PHONE_PATTERN = "^\\+?[1-9][0-9]{1,14}$"

/**
 * GoTrue's `formatPhoneNumber`, kept exact because stored phones and OTP token hashes are built from its
 * output: one leading `+` is dropped, then every ASCII space. Nothing else is stripped, so dashes,
 * parentheses, tabs and a space before the `+` still make the number invalid. The password grant looks
 * users up by this form without validating it.
 */
export const formatPhoneNumber = (input: string): string =>
  (input.startsWith("+") ? input.slice(1) : input).replaceAll(" ", "")

/** The phone as stored and returned: E.164 digits without the `+`. */
export const normalizePhone = (input: string): Option.Option<string> => {
  const phone = formatPhoneNumber(input)
  return E164.test(phone) ? Option.some(phone) : Option.none()
}
