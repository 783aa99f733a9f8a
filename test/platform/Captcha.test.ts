import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Option, Queue, Redacted, TestClock } from "effect"
import { Captcha, type CaptchaCheck, CaptchaLive, type CaptchaOptions, type CaptchaProvider, CAPTCHA_VERIFY_URLS } from "../../src/platform/Captcha.js"
import { CaptchaVerdict } from "../../src/domain/CaptchaVerdict.js"
import { fakeCaptchaProvider } from "./FakeCaptchaProvider.js"
import { formFields, startHttpStub, unusedPort } from "./LocalServers.js"

const secret = "0x5ec2e7-captcha-secret-4a1b"
const passing = "P1_eyJ0eXAiOiJKV1Qi.solved-widget-token"

const options = (provider: CaptchaProvider, verifyUrl: string): CaptchaOptions => ({
  provider,
  secret: Redacted.make(secret),
  timeout: "5 seconds",
  verifyUrl
})

const verifyWith = (settings: CaptchaOptions, check: CaptchaCheck) =>
  Effect.flatMap(Captcha, (captcha) => captcha.verify(check)).pipe(Effect.provide(CaptchaLive(settings)))

/** A provider's siteverify on a local port, at the path the real one has. */
const startProvider = (provider: CaptchaProvider) =>
  Effect.map(startHttpStub(fakeCaptchaProvider({ provider, secret, passing })), (stub) => ({
    ...stub,
    verifyUrl: `${stub.baseUrl}${new URL(CAPTCHA_VERIFY_URLS[provider]).pathname}`
  }))

const expectNoSecret = (error: unknown) => {
  expect(JSON.stringify(error)).not.toContain(secret)
  expect(String(error)).not.toContain(secret)
}

describe("Captcha", () => {
  it("verifies with the providers' own siteverify URLs by default", () => {
    expect(CAPTCHA_VERIFY_URLS).toStrictEqual({
      hcaptcha: "https://hcaptcha.com/siteverify",
      turnstile: "https://challenges.cloudflare.com/turnstile/v0/siteverify"
    })
  })

  for (const provider of ["hcaptcha", "turnstile"] as const) {
    describe(provider, () => {
      it.scoped("posts the form the provider reads (secret, response, remoteip) and passes a solved token", () =>
        Effect.gen(function*() {
          const stub = yield* startProvider(provider)
          const verdict = yield* verifyWith(options(provider, stub.verifyUrl), { token: passing, remoteIp: "203.0.113.7" })

          expect(verdict).toStrictEqual(CaptchaVerdict.Passed())
          const request = yield* Queue.take(stub.requests)
          expect(request.method).toBe("POST")
          expect(request.url).toBe(new URL(CAPTCHA_VERIFY_URLS[provider]).pathname)
          expect(request.headers["content-type"]).toBe("application/x-www-form-urlencoded")
          expect(formFields(request.body)).toStrictEqual([["secret", secret], ["response", passing], ["remoteip", "203.0.113.7"]])
        }))

      it.scoped("leaves remoteip out when the address is unknown", () =>
        Effect.gen(function*() {
          const stub = yield* startProvider(provider)
          yield* verifyWith(options(provider, stub.verifyUrl), { token: passing })

          const request = yield* Queue.take(stub.requests)
          expect(formFields(request.body)).toStrictEqual([["secret", secret], ["response", passing]])
        }))

      it.scoped("reports the provider's error codes for a token it refuses", () =>
        Effect.gen(function*() {
          const stub = yield* startProvider(provider)
          const verdict = yield* verifyWith(options(provider, stub.verifyUrl), { token: "forged-token" })

          expect(verdict).toStrictEqual(CaptchaVerdict.Rejected({ errorCodes: ["invalid-input-response"] }))
        }))

      it.scoped("a wrong secret is refused by the provider, and the verdict does not carry it", () =>
        Effect.gen(function*() {
          const stub = yield* startProvider(provider)
          const verdict = yield* verifyWith({ ...options(provider, stub.verifyUrl), secret: Redacted.make("not-the-secret") }, {
            token: passing
          })

          expect(verdict).toStrictEqual(CaptchaVerdict.Rejected({ errorCodes: ["invalid-input-secret"] }))
        }))

      it.scoped("gives up after the timeout when the provider does not answer", () =>
        Effect.gen(function*() {
          const stub = yield* startHttpStub(() => "hang")
          const fiber = yield* verifyWith(options(provider, stub.baseUrl), { token: passing }).pipe(Effect.flip, Effect.fork)
          yield* Queue.take(stub.requests)
          yield* TestClock.adjust("5 seconds")
          const error = yield* Fiber.join(fiber)

          expect(error).toMatchObject({ _tag: "CaptchaUnavailable", provider, reason: "timeout", message: "no answer within 5s" })
          expectNoSecret(error)
        }))
    })
  }

  it.scoped("is still waiting just before the timeout", () =>
    Effect.gen(function*() {
      const stub = yield* startHttpStub(() => "hang")
      const fiber = yield* verifyWith(options("hcaptcha", stub.baseUrl), { token: passing }).pipe(Effect.flip, Effect.fork)
      yield* Queue.take(stub.requests)
      yield* TestClock.adjust("4999 millis")

      expect(yield* Fiber.poll(fiber)).toStrictEqual(Option.none())
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(fiber)).toMatchObject({ reason: "timeout" })
    }))

  it.scoped("says the provider could not be reached, with the transport's code only", () =>
    Effect.gen(function*() {
      const port = yield* unusedPort
      const error = yield* verifyWith(options("turnstile", `http://127.0.0.1:${port}/siteverify`), { token: passing }).pipe(Effect.flip)

      expect(error).toMatchObject({ provider: "turnstile", reason: "unreachable", message: "request failed (ECONNREFUSED)" })
      expectNoSecret(error)
    }))

  it.scoped("an answer that is not a verdict (a proxy's error page, JSON of another shape) is no verdict", () =>
    Effect.gen(function*() {
      const page = yield* startHttpStub(() => ({ status: 502, text: `<html>Bad Gateway ${secret}</html>`, contentType: "text/html" }))
      const pageError = yield* verifyWith(options("hcaptcha", page.baseUrl), { token: passing }).pipe(Effect.flip)
      expect(pageError).toMatchObject({ reason: "unexpected_answer", message: "answer is not a verdict (HTTP 502)" })
      expectNoSecret(pageError)

      const other = yield* startHttpStub(() => ({ status: 200, json: { ok: true } }))
      const otherError = yield* verifyWith(options("turnstile", other.baseUrl), { token: passing }).pipe(Effect.flip)
      expect(otherError).toMatchObject({ reason: "unexpected_answer", message: "answer is not a verdict (HTTP 200)" })
    }))
})
