import type { HttpClient, HttpClientRequest } from "@effect/platform"
import { Context, Data, Duration, Effect, Layer, Ref } from "effect"

/** One outgoing text message. */
export interface Sms {
  /** E.164 digits without the leading "+", as GoTrue stores phone numbers. */
  readonly to: string
  readonly body: string
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

/**
 * Runs one provider call for the provider files: bounded by `timeout`, with transport failures turned into
 * SmsError. Interruption (including the timeout) aborts the underlying request.
 */
export const callProvider = (
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
      send: Effect.fn("SmsSender.send")(function*(sms: Sms) {
        const count = yield* Ref.updateAndGet(messages, (sent) => [...sent, sms])
        return { messageId: `memory-${count.length}` }
      })
    })
  )
).pipe(Layer.provideMerge(SentSms.Default))

/** The embedded default: texts are written to the log (they carry codes, so this is for development only). */
export const LogSmsSender: Layer.Layer<SmsSender> = Layer.succeed(SmsSender, {
  send: (sms) =>
    Effect.logInfo("sms (not sent: no SMS_PROVIDER configured)").pipe(
      Effect.annotateLogs({ to: sms.to, body: sms.body }),
      Effect.as({ messageId: "log" })
    )
})
