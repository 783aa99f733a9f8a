import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { formSmsSender, type ProviderAnswer, type ProviderEndpoint, SmsError } from "./SmsSender.js"

/** GoTrue's `textlocal` provider: SMS_TEXTLOCAL_API_KEY / _SENDER. */
export interface TextlocalSmsSenderOptions extends ProviderEndpoint {
  readonly apiKey: Redacted.Redacted<string>
  /** The sender name or number shown to the recipient. */
  readonly sender: string
}

const Answer = Schema.Struct({
  status: Schema.String,
  messages: Schema.optional(Schema.Array(Schema.Struct({ id: Schema.Union(Schema.String, Schema.Number) }))),
  errors: Schema.optional(
    Schema.Array(Schema.Struct({ code: Schema.optional(Schema.Number), message: Schema.String }))
  )
})

const provider = "textlocal"

/** Sends through Textlocal's API (POST /send/), which takes the key in the form body. */
export const TextlocalSmsSender = formSmsSender({
  provider,
  request: (options: TextlocalSmsSenderOptions) => ({
    url: `${options.baseUrl ?? "https://api.txtlocal.com"}/send/`,
    form: (sms) => ({
      apikey: Redacted.value(options.apiKey),
      sender: options.sender,
      numbers: sms.to,
      message: sms.body
    })
  }),
  receipt: Effect.fnUntraced(function*(answer: ProviderAnswer) {
    const decoded = Option.getOrUndefined(Schema.decodeUnknownOption(Answer)(answer.json))
    // Textlocal reports most rejections (bad key, no credit, bad number) as 200 with status "failure".
    const errors = decoded?.errors ?? []
    if (errors.length > 0) {
      return yield* new SmsError({
        provider,
        status: answer.status,
        message: errors.map((error) => error.message).join("; "),
        ...(errors[0]?.code === undefined ? {} : { code: String(errors[0].code) })
      })
    }
    if (answer.status < 200 || answer.status >= 300) {
      return yield* new SmsError({ provider, status: answer.status, message: `HTTP ${answer.status}` })
    }
    const id = decoded?.status === "success" ? decoded.messages?.[0]?.id : undefined
    if (id === undefined) {
      return yield* new SmsError({ provider, status: answer.status, message: "unexpected answer: no message id" })
    }
    return { messageId: String(id) }
  })
})
