import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { formSmsSender, type ProviderAnswer, type ProviderEndpoint, SmsError } from "./SmsSender.js"

/** The spec's "provider A": SMS_PROVIDERA_ACCOUNT_SID / _AUTH_TOKEN / _MESSAGE_SERVICE_SID. */
export interface TwilioSmsSenderOptions extends ProviderEndpoint {
  readonly accountSid: string
  readonly authToken: Redacted.Redacted<string>
  /** A Messaging Service SID ("MG…") or, as the spec allows, the sender's own phone number. */
  readonly messageServiceSid: string
  /**
   * SMS_TWILIO_CONTENT_SID: the approved WhatsApp template ("HX…") a WhatsApp message is sent as, with the code as
   * its variable 1 (WhatsApp takes only templates for messages a business starts); without it, the body as written.
   */
  readonly contentSid?: string | undefined
}

/** A sender that is a phone number (not a Messaging Service SID), which WhatsApp addresses as `whatsapp:+…`. */
const PHONE_NUMBER = /^\+?[1-9][0-9]{1,14}$/

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

/**
 * Sends through Twilio's Programmable Messaging API (POST …/Accounts/{sid}/Messages.json), as a text or, for the
 * WhatsApp channel, as GoTrue sends it there: both addresses with the `whatsapp:` prefix (a Messaging Service SID
 * keeps its own parameter), and the content template with the code when SMS_TWILIO_CONTENT_SID is set.
 */
export const TwilioSmsSender = formSmsSender({
  provider,
  whatsapp: true,
  request: (options: TwilioSmsSenderOptions) => {
    const service = options.messageServiceSid
    // Twilio only treats an MG… SID as a Messaging Service in its own parameter; anything else is a sender.
    const sender = (whatsapp: boolean) =>
      service.startsWith("MG")
        ? { MessagingServiceSid: service }
        : { From: whatsapp && PHONE_NUMBER.test(service.replaceAll(" ", "")) ? `whatsapp:${service}` : service }
    const content = (code: string | undefined) =>
      options.contentSid !== undefined && options.contentSid !== "" && code !== undefined
        ? { ContentSid: options.contentSid, ContentVariables: JSON.stringify({ "1": code }) }
        : undefined
    return {
      url: `${options.baseUrl ?? "https://api.twilio.com"}/2010-04-01/Accounts/${
        encodeURIComponent(options.accountSid)
      }/Messages.json`,
      authenticate: HttpClientRequest.basicAuth(options.accountSid, options.authToken),
      form: (sms) =>
        sms.channel === "whatsapp"
          ? { To: `whatsapp:+${sms.to}`, ...sender(true), ...(content(sms.code) ?? { Body: sms.body }) }
          : { To: `+${sms.to}`, Body: sms.body, ...sender(false) }
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
