import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import { type CaptchaOutage, type CaptchaVerdict, verdictOf } from "../domain/CaptchaVerdict.js"
import { traced } from "./Traced.js"

export type CaptchaProvider = "hcaptcha" | "turnstile"

/** Where each provider verifies a token (its "siteverify" API). */
export const CAPTCHA_VERIFY_URLS: Readonly<Record<CaptchaProvider, string>> = {
  hcaptcha: "https://hcaptcha.com/siteverify",
  turnstile: "https://challenges.cloudflare.com/turnstile/v0/siteverify"
}

/** One token to verify, as the widget in the user's browser produced it. */
export interface CaptchaCheck {
  readonly token: string
  /** The user's address: a signal the provider weighs, left out when unknown. */
  readonly remoteIp?: string | undefined
}

/**
 * The provider said nothing about the token: it did not answer in time, could not be reached, or answered with
 * something that is not a verdict. `message` is ours, for the log; it never carries the secret (which travels in
 * the form body) nor the provider's body.
 */
export class CaptchaUnavailable extends Data.TaggedError("CaptchaUnavailable")<{
  readonly provider: CaptchaProvider
  readonly reason: CaptchaOutage
  readonly message: string
}> {}

export class Captcha extends Context.Tag("platform/Captcha")<
  Captcha,
  {
    readonly verify: (check: CaptchaCheck) => Effect.Effect<CaptchaVerdict, CaptchaUnavailable>
  }
>() {}

export interface CaptchaOptions {
  readonly provider: CaptchaProvider
  readonly secret: Redacted.Redacted<string>
  readonly timeout: Duration.DurationInput
  /** Defaults to the provider's own; tests and egress proxies set another. */
  readonly verifyUrl?: string | undefined
}

// Node's fetch fails with "fetch failed" and the useful part (ECONNREFUSED, ENOTFOUND) one level down. Only the
// code is kept: it cannot carry the request body, where the secret is.
const transportCode = (cause: unknown): string => {
  const inner: unknown = typeof cause === "object" && cause !== null && "cause" in cause ? cause.cause : undefined
  const code: unknown = typeof inner === "object" && inner !== null && "code" in inner ? inner.code : undefined
  return typeof code === "string" ? ` (${code})` : ""
}

/**
 * Verifies tokens with hCaptcha or Turnstile: one form POST of `secret`, `response` and, when known, `remoteip`.
 * The whole exchange, answer body included, is bounded by `timeout`; when it runs out the fetch is aborted.
 */
export const CaptchaLive = (options: CaptchaOptions): Layer.Layer<Captcha> => {
  const { provider } = options
  const url = options.verifyUrl ?? CAPTCHA_VERIFY_URLS[provider]
  const timeout = Duration.decode(options.timeout)
  const unavailable = (reason: CaptchaUnavailable["reason"], message: string) =>
    new CaptchaUnavailable({ provider, reason, message })

  const verify = traced("Captcha.verify")(function*(check: CaptchaCheck) {
    yield* Effect.annotateCurrentSpan("captcha.provider", provider)
    const form = new URLSearchParams({ secret: Redacted.value(options.secret), response: check.token })
    if (check.remoteIp !== undefined) form.set("remoteip", check.remoteIp)
    const answer = yield* Effect.tryPromise({
      try: async (signal) => {
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
          body: form.toString(),
          signal
        })
        return { status: response.status, text: await response.text() }
      },
      catch: (cause) => unavailable("unreachable", `request failed${transportCode(cause)}`)
    }).pipe(
      Effect.timeoutFail({
        duration: timeout,
        onTimeout: () => unavailable("timeout", `no answer within ${Duration.format(timeout)}`)
      })
    )
    return yield* Option.match(verdictOf(parseJson(answer.text)), {
      onNone: () => Effect.fail(unavailable("unexpected_answer", `answer is not a verdict (HTTP ${answer.status})`)),
      onSome: Effect.succeed
    })
  })
  return Layer.succeed(Captcha, Captcha.of({ verify }))
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** What CaptchaTest was asked, oldest first, for tests to read. */
export class CaptchaChecks extends Effect.Service<CaptchaChecks>()("platform/CaptchaChecks", {
  effect: Effect.map(Ref.make<ReadonlyArray<CaptchaCheck>>([]), (checks) => ({ checks }))
}) {}

/** For tests: `answer` plays the provider; every check is recorded in CaptchaChecks, which comes along. */
export const CaptchaTest = (
  answer: (check: CaptchaCheck) => Effect.Effect<CaptchaVerdict, CaptchaUnavailable>
): Layer.Layer<Captcha | CaptchaChecks> =>
  Layer.effect(
    Captcha,
    Effect.map(CaptchaChecks, ({ checks }) =>
      Captcha.of({
        verify: traced("Captcha.verify")(function*(check: CaptchaCheck) {
          yield* Ref.update(checks, (asked) => [...asked, check])
          return yield* answer(check)
        })
      }))
  ).pipe(Layer.provideMerge(CaptchaChecks.Default))

/**
 * Captcha off and no secret set: nothing may ask for a verification then (the check is skipped before the port is
 * called), so a call is a bug, and it fails loudly instead of letting the request through.
 */
export const UnconfiguredCaptcha: Layer.Layer<Captcha> = Layer.succeed(Captcha, {
  verify: () => Effect.dieMessage("captcha verification asked for with no SECURITY_CAPTCHA_SECRET set")
})
