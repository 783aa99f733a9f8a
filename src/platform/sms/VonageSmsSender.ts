import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { formSmsSender, type ProviderAnswer, type ProviderEndpoint, SmsError } from "./SmsSender.js"

/** GoTrue's `vonage` provider: SMS_VONAGE_API_KEY / _API_SECRET / _FROM. */
export interface VonageSmsSenderOptions extends ProviderEndpoint {
  readonly apiKey: string
  readonly apiSecret: Redacted.Redacted<string>
  /** A phone number or an alphanumeric sender id. */
  readonly from: string
}

const Answer = Schema.Struct({
  messages: Schema.NonEmptyArray(Schema.Struct({
    status: Schema.String,
    "message-id": Schema.optional(Schema.String),
    "error-text": Schema.optional(Schema.String)
  }))
})

const provider = "vonage"

// Control characters count as ASCII, as Go's utf8string.IsASCII (what GoTrue checks) counts them.
const isAscii = (text: string): boolean => {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false
  return true
}

/** Sends through Vonage's (Nexmo's) SMS API (POST /sms/json), which takes the credentials in the form body. */
export const VonageSmsSender = formSmsSender({
  provider,
  request: (options: VonageSmsSenderOptions) => ({
    url: `${options.baseUrl ?? "https://rest.nexmo.com"}/sms/json`,
    form: (sms) => ({
      from: options.from,
      to: sms.to,
      text: sms.body,
      api_key: options.apiKey,
      api_secret: Redacted.value(options.apiSecret),
      // As GoTrue does: without it Vonage sends the text as GSM-7 and mangles anything outside it.
      ...(isAscii(sms.body) ? {} : { type: "unicode" })
    })
  }),
  receipt: Effect.fnUntraced(function*(answer: ProviderAnswer) {
    const decoded = Option.getOrUndefined(Schema.decodeUnknownOption(Answer)(answer.json))
    // Vonage answers 200 whatever happened; each message carries its own status, "0" meaning accepted.
    const message = decoded?.messages[0]
    if (message !== undefined && message.status !== "0") {
      return yield* new SmsError({
        provider,
        status: answer.status,
        code: message.status,
        message: message["error-text"] ?? `status ${message.status}`
      })
    }
    if (answer.status < 200 || answer.status >= 300) {
      return yield* new SmsError({ provider, status: answer.status, message: `HTTP ${answer.status}` })
    }
    if (message?.["message-id"] === undefined) {
      return yield* new SmsError({ provider, status: answer.status, message: "unexpected answer: no message id" })
    }
    return { messageId: message["message-id"] }
  })
})
