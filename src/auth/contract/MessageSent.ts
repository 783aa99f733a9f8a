import * as Schema from "effect/Schema"

/** What /otp and /resend answer: `{}`, or the SMS provider's id when a text went to a known number. */
export const MessageSent = Schema.Struct({ message_id: Schema.optional(Schema.String) })
