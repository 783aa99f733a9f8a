import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { formSmsSender, type ProviderAnswer, type ProviderEndpoint, SmsError } from "./SmsSender.js"

/** The spec's "provider B": SMS_PROVIDERB_ACCESS_KEY / _ORIGINATOR. */
export interface MessagebirdSmsSenderOptions extends ProviderEndpoint {
  readonly accessKey: Redacted.Redacted<string>
  /** A phone number with "+" or a company name. */
  readonly originator: string
}

const Accepted = Schema.Struct({
  id: Schema.String,
  recipients: Schema.optional(Schema.Struct({ totalSentCount: Schema.Number }))
})

const Rejected = Schema.Struct({
  errors: Schema.NonEmptyArray(Schema.Struct({ code: Schema.optional(Schema.Number), description: Schema.String }))
})

const provider = "messagebird"

/** Sends through MessageBird's REST API (POST /messages). */
export const MessagebirdSmsSender = formSmsSender({
  provider,
  request: (options: MessagebirdSmsSenderOptions) => ({
    url: `${options.baseUrl ?? "https://rest.messagebird.com"}/messages`,
    authenticate: HttpClientRequest.setHeader("Authorization", `AccessKey ${Redacted.value(options.accessKey)}`),
    // type and datacoding as GoTrue sends them: unicode keeps non-GSM characters of a template intact.
    form: (sms) => ({
      originator: options.originator,
      body: sms.body,
      recipients: sms.to,
      type: "sms",
      datacoding: "unicode"
    })
  }),
  receipt: Effect.fnUntraced(function*(answer: ProviderAnswer) {
    if (answer.status < 200 || answer.status >= 300) {
      const rejected = Option.getOrUndefined(Schema.decodeUnknownOption(Rejected)(answer.json))
      return yield* new SmsError({
        provider,
        status: answer.status,
        message: rejected?.errors.map((error) => error.description).join("; ") ?? `HTTP ${answer.status}`,
        ...(rejected?.errors[0].code === undefined ? {} : { code: String(rejected.errors[0].code) })
      })
    }
    const accepted = yield* Schema.decodeUnknown(Accepted)(answer.json).pipe(
      Effect.mapError(() =>
        new SmsError({ provider, status: answer.status, message: "unexpected answer: no message id" })
      )
    )
    // MessageBird answers 201 even when it dropped every recipient; GoTrue treats that as a failure too.
    if (accepted.recipients?.totalSentCount === 0) {
      return yield* new SmsError({
        provider,
        status: answer.status,
        message: `message ${accepted.id} sent to no recipient`
      })
    }
    return { messageId: accepted.id }
  })
})
