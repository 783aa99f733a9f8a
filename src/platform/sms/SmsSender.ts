import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as UrlParams from "@effect/platform/UrlParams"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import { identity } from "effect/Function"
import { type MessageFacts, Outbox } from "../mail/Outbox.js"
import { traced } from "../Traced.js"

/** How a message reaches the phone: a text, or WhatsApp (through the providers that offer it). */
export type SmsChannel = "sms" | "whatsapp"

/** One outgoing text message. */
export interface Sms {
  /** E.164 digits without the leading "+", as GoTrue stores phone numbers. */
  readonly to: string
  readonly body: string
  /** Default "sms". A provider without WhatsApp refuses "whatsapp" rather than text instead. */
  readonly channel?: SmsChannel
  /** The one-time code the body carries, for a provider that puts it into its own approved template. */
  readonly code?: string
  /** What the text is, for the development outbox; a provider is sent only the fields above. */
  readonly about?: MessageFacts
}

/** The provider's id for the accepted message (GoTrue returns it as `message_id`). */
export interface SmsReceipt {
  readonly messageId: string
}

/**
 * The provider did not accept the message. `message` is the provider's own explanation (or ours for
 * transport failures and timeouts); it never carries the credentials (which travel in headers or, for Textlocal and Vonage, in the form body).
 */
export class SmsError extends Data.TaggedError("SmsError")<{
  readonly provider: string
  readonly message: string
  /** The HTTP status of the provider's answer, when there was one. */
  readonly status?: number
  /** The provider's error code, e.g. Twilio's 21211. */
  readonly code?: string
}> {}

export class SmsSender extends Context.Tag("platform/SmsSender")<
  SmsSender,
  {
    readonly send: (sms: Sms) => Effect.Effect<SmsReceipt, SmsError>
  }
>() {}

/** GOTRUE_INTERNAL_HTTP_TIMEOUT's default: a provider call never holds an OTP request longer than this. */
export const defaultProviderTimeout: Duration.Duration = Duration.seconds(10)

/** A provider's answer: the status and the body as JSON, or undefined when it was not JSON (a proxy's HTML page). */
export interface ProviderAnswer {
  readonly status: number
  readonly json: unknown
}

/** What every provider's options share besides its credentials. */
export interface ProviderEndpoint {
  /** Defaults to the real API; tests point it at a local server. */
  readonly baseUrl?: string
  readonly timeout?: Duration.DurationInput
}

/** The part of a provider's request that is its own; every provider POSTs a form and accepts JSON. */
export interface ProviderRequest {
  readonly url: string
  /** For providers that take their credentials in headers; the others put them in the form. */
  readonly authenticate?: (request: HttpClientRequest.HttpClientRequest) => HttpClientRequest.HttpClientRequest
  readonly form: (sms: Sms) => UrlParams.Input
}

/**
 * Builds a provider's SmsSender from its request and its reading of the answer, which stays with the provider:
 * each reports rejections its own way (Textlocal and Vonage inside a 200).
 */
export const formSmsSender = <Options extends ProviderEndpoint>({ provider, receipt, request, whatsapp = false }: {
  readonly provider: string
  readonly request: (options: Options) => ProviderRequest
  readonly receipt: (answer: ProviderAnswer) => Effect.Effect<SmsReceipt, SmsError>
  /** Whether the provider's form can carry a WhatsApp message. */
  readonly whatsapp?: boolean
}) =>
(options: Options): Layer.Layer<SmsSender, never, HttpClient.HttpClient> =>
  Layer.effect(
    SmsSender,
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const { authenticate = identity, form, url } = request(options)
      const timeout = options.timeout ?? defaultProviderTimeout

      const send = traced("SmsSender.send")(function*(sms: Sms) {
        yield* Effect.annotateCurrentSpan("sms.provider", provider)
        if (sms.channel === "whatsapp" && !whatsapp) {
          return yield* new SmsError({ provider, message: `${provider} does not send WhatsApp messages` })
        }
        const answer = yield* callProvider(
          provider,
          client,
          HttpClientRequest.post(url).pipe(
            authenticate,
            HttpClientRequest.acceptJson,
            HttpClientRequest.bodyUrlParams(form(sms))
          ),
          timeout
        )
        return yield* receipt(answer)
      })
      return SmsSender.of({ send })
    })
  )

/**
 * Runs one provider call: bounded by `timeout`, with transport failures turned into SmsError. Interruption
 * (including the timeout) aborts the underlying request.
 */
const callProvider = (
  provider: string,
  client: HttpClient.HttpClient,
  request: HttpClientRequest.HttpClientRequest,
  timeout: Duration.DurationInput
): Effect.Effect<ProviderAnswer, SmsError> =>
  client.execute(request).pipe(
    Effect.flatMap((response) =>
      response.json.pipe(
        Effect.orElseSucceed(() => undefined),
        Effect.map((json): ProviderAnswer => ({ status: response.status, json }))
      )
    ),
    Effect.mapError((error) =>
      new SmsError({ provider, message: `request failed: ${error.reason}${transportCode(error.cause)}` })
    ),
    Effect.timeoutFail({
      duration: timeout,
      onTimeout: () => new SmsError({ provider, message: `no answer within ${Duration.format(timeout)}` })
    })
  )

// The useful part (ECONNREFUSED, ENOTFOUND) sits on the error itself for node clients, one level down for fetch
// ("fetch failed"). Only the code is kept: it cannot carry a header or a body.
const transportCode = (cause: unknown): string => {
  let current = cause
  for (let depth = 0; depth < 3 && typeof current === "object" && current !== null; depth++) {
    if ("code" in current && typeof current.code === "string") return ` (${current.code})`
    current = "cause" in current ? current.cause : undefined
  }
  return ""
}

/** What MemorySmsSender has "sent", oldest first, for tests to read. */
export class SentSms extends Effect.Service<SentSms>()("platform/SentSms", {
  effect: Effect.map(Ref.make<ReadonlyArray<Sms>>([]), (messages) => ({ messages }))
}) {}

/** Records every message instead of sending it; provides SentSms alongside SmsSender. */
export const MemorySmsSender: Layer.Layer<SmsSender | SentSms> = Layer.effect(
  SmsSender,
  Effect.map(SentSms, ({ messages }) =>
    SmsSender.of({
      send: traced("SmsSender.send")(function*(sms: Sms) {
        const count = yield* Ref.updateAndGet(messages, (sent) => [...sent, sms])
        return { messageId: `memory-${count.length}` }
      })
    })
  )
).pipe(Layer.provideMerge(SentSms.Default))

/**
 * The embedded default's SMS sender (no complete SMS provider): each text is kept in the Outbox, and one log line
 * says so, naming the number, the kind of text and the outbox page, never the body or the code. The answer's
 * message id is "outbox".
 */
export const OutboxSmsSender = (pageUrl: string): Layer.Layer<SmsSender, never, Outbox> =>
  Layer.effect(
    SmsSender,
    Effect.map(Outbox, (outbox) =>
      SmsSender.of({
        send: traced("SmsSender.send")(function*(sms: Sms) {
          yield* outbox.add({ channel: "sms", to: sms.to, body: sms.body, about: sms.about })
          yield* Effect.logInfo("text not sent (no SMS provider): kept in the outbox").pipe(
            Effect.annotateLogs({ to: sms.to, ...(sms.about === undefined ? {} : { type: sms.about.type }), outbox: pageUrl })
          )
          return { messageId: "outbox" }
        })
      }))
  )

/**
 * Production with phone sign-in on but no usable provider (GoTrue starts in that state too): every send fails
 * with the reason, which the flow answers with GoTrue's sms_send_failed.
 */
export const UnconfiguredSmsSender = (reason: string): Layer.Layer<SmsSender> =>
  Layer.succeed(SmsSender, {
    send: () => Effect.fail(new SmsError({ provider: "none", message: reason }))
  })
