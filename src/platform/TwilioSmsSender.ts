import { HttpClientRequest } from "@effect/platform"
import { Effect, Option, type Redacted, Schema } from "effect"
import { formSmsSender, type ProviderAnswer, type ProviderEndpoint, SmsError } from "./SmsSender.js"

/** The spec's "provider A": SMS_PROVIDERA_ACCOUNT_SID / _AUTH_TOKEN / _MESSAGE_SERVICE_SID. */
export interface TwilioSmsSenderOptions extends ProviderEndpoint {
  readonly accountSid: string
  readonly authToken: Redacted.Redacted<string>
  /** A Messaging Service SID ("MG…") or, as the spec allows, the sender's own phone number. */
  readonly messageServiceSid: string
}

const Accepted = Schema.Struct({
  sid: Schema.String,
  status: Schema.optional(Schema.String),
  error_code: Schema.optional(Schema.NullOr(Schema.Union(Schema.Number, Schema.String))),
  error_message: Schema.optional(Schema.NullOr(Schema.String))
})

const Rejected = Schema.Struct({
  code: Schema.optional(Schema.Number),
  message: Schema.String
})

const provider = "twilio"

/** Sends through Twilio's Programmable Messaging API (POST …/Accounts/{sid}/Messages.json). */
export const TwilioSmsSender = formSmsSender({
  provider,
  request: (options: TwilioSmsSenderOptions) => {
    // Twilio only treats an MG… SID as a Messaging Service in its own parameter; anything else is a sender.
    const sender = options.messageServiceSid.startsWith("MG")
      ? { MessagingServiceSid: options.messageServiceSid }
      : { From: options.messageServiceSid }
    return {
      url: `${options.baseUrl ?? "https://api.twilio.com"}/2010-04-01/Accounts/${
        encodeURIComponent(options.accountSid)
      }/Messages.json`,
      authenticate: HttpClientRequest.basicAuth(options.accountSid, options.authToken),
      form: (sms) => ({ To: `+${sms.to}`, Body: sms.body, ...sender })
    }
  },
  receipt: Effect.fnUntraced(function*(answer: ProviderAnswer) {
    if (answer.status < 200 || answer.status >= 300) {
      const rejected = Option.getOrUndefined(Schema.decodeUnknownOption(Rejected)(answer.json))
      return yield* new SmsError({
        provider,
        status: answer.status,
        message: rejected?.message ?? `HTTP ${answer.status}`,
        ...(rejected?.code === undefined ? {} : { code: String(rejected.code) })
      })
    }
    const accepted = yield* Schema.decodeUnknown(Accepted)(answer.json).pipe(
      Effect.mapError(() =>
        new SmsError({ provider, status: answer.status, message: "unexpected answer: no message sid" })
      )
    )
    // A 2xx can still carry a message Twilio already gave up on (GoTrue checks the same two states).
    if (accepted.status === "failed" || accepted.status === "undelivered") {
      return yield* new SmsError({
        provider,
        status: answer.status,
        message: `message ${accepted.sid} ${accepted.status}: ${accepted.error_message ?? "no reason given"}`,
        ...(accepted.error_code == null ? {} : { code: String(accepted.error_code) })
      })
    }
    return { messageId: accepted.sid }
  })
})
