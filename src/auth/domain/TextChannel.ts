import * as Either from "effect/Either"
import { AuthError } from "./AuthError.js"

/** How a code goes to a phone: a text message, or a WhatsApp message. */
export type TextChannel = "sms" | "whatsapp"

/** GoTrue's InvalidChannelError, word for word. */
export const invalidChannelMessage =
  "Invalid channel, supported values are 'sms' or 'whatsapp'. 'whatsapp' is only supported if Twilio or Twilio Verify is used as the provider."

/**
 * The channel a phone OTP request asks for, by GoTrue's rules (IsValidMessageChannel): none means `sms`; `whatsapp`
 * only when the SMS provider can send it (`whatsappAvailable`: Twilio); anything else is GoTrue's 400.
 */
export const textChannel = (requested: string | null | undefined, whatsappAvailable: boolean): Either.Either<TextChannel, AuthError> => {
  const channel = requested ?? ""
  if (channel === "" || channel === "sms") return Either.right("sms")
  if (channel === "whatsapp" && whatsappAvailable) return Either.right("whatsapp")
  return Either.left(AuthError.validation(invalidChannelMessage))
}
