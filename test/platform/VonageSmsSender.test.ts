import { FetchHttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Queue, Redacted, TestClock } from "effect"
import { type Sms, SmsSender } from "../../src/platform/sms/SmsSender.js"
import { VonageSmsSender, type VonageSmsSenderOptions } from "../../src/platform/sms/VonageSmsSender.js"
import { formFields, startHttpStub, unusedPort } from "./LocalServers.js"

const apiSecret = "vonage-api-secret-3d2c1b"

const options = (baseUrl: string): VonageSmsSenderOptions => ({
  apiKey: "a1b2c3d4",
  apiSecret: Redacted.make(apiSecret),
  from: "Gatehouse",
  baseUrl
})

const sendWith = (settings: VonageSmsSenderOptions, sms: Sms) =>
  Effect.flatMap(SmsSender, (sender) => sender.send(sms)).pipe(
    Effect.provide(VonageSmsSender(settings).pipe(Layer.provide(FetchHttpClient.layer)))
  )

const otp: Sms = { to: "447700900000", body: "Your code is 123456" }

const accepted = {
  "message-count": "1",
  messages: [{
    to: "447700900000",
    "message-id": "0A0000000123ABCD1",
    status: "0",
    "remaining-balance": "3.14159265",
    "message-price": "0.03330000",
    network: "12345"
  }]
}

describe("VonageSmsSender", () => {
  it.scoped("posts the form Vonage expects, with the credentials in the body", () =>
    Effect.gen(function*() {
      const vonage = yield* startHttpStub(() => ({ status: 200, json: accepted }))
      const receipt = yield* sendWith(options(vonage.baseUrl), otp)

      expect(receipt).toEqual({ messageId: "0A0000000123ABCD1" })
      const request = yield* Queue.take(vonage.requests)
      expect(request.method).toBe("POST")
      expect(request.url).toBe("/sms/json")
      expect(request.headers["content-type"]).toBe("application/x-www-form-urlencoded")
      expect(request.headers.authorization).toBeUndefined()
      expect(formFields(request.body)).toEqual([
        ["from", "Gatehouse"],
        ["to", "447700900000"],
        ["text", "Your code is 123456"],
        ["api_key", "a1b2c3d4"],
        ["api_secret", apiSecret]
      ])
    }))

  it.scoped("asks for unicode when the text is not ASCII, as GoTrue does", () =>
    Effect.gen(function*() {
      const vonage = yield* startHttpStub(() => ({ status: 200, json: accepted }))
      yield* sendWith(options(vonage.baseUrl), { to: "5511987654321", body: "Código: 654321 ✓" })

      const request = yield* Queue.take(vonage.requests)
      expect(formFields(request.body)).toEqual([
        ["from", "Gatehouse"],
        ["to", "5511987654321"],
        ["text", "Código: 654321 ✓"],
        ["api_key", "a1b2c3d4"],
        ["api_secret", apiSecret],
        ["type", "unicode"]
      ])
    }))

  it.scoped("carries Vonage's error-text and status from a 200 answer, and never the secret", () =>
    Effect.gen(function*() {
      const vonage = yield* startHttpStub(() => ({
        status: 200,
        json: { "message-count": "1", messages: [{ status: "4", "error-text": "Bad Credentials" }] }
      }))
      const error = yield* sendWith(options(vonage.baseUrl), otp).pipe(Effect.flip)

      expect(error).toMatchObject({
        _tag: "SmsError",
        provider: "vonage",
        status: 200,
        code: "4",
        message: "Bad Credentials"
      })
      expect(JSON.stringify(error)).not.toContain(apiSecret)
      expect(String(error)).not.toContain(apiSecret)
    }))

  it.scoped("names the status when a rejection has no error-text", () =>
    Effect.gen(function*() {
      const vonage = yield* startHttpStub(() => ({ status: 200, json: { messages: [{ status: "9" }] } }))
      const error = yield* sendWith(options(vonage.baseUrl), otp).pipe(Effect.flip)

      expect(error).toMatchObject({ provider: "vonage", code: "9", message: "status 9" })
    }))

  it.scoped("rejects an answer without messages", () =>
    Effect.gen(function*() {
      const vonage = yield* startHttpStub(() => ({ status: 200, json: { "message-count": "0", messages: [] } }))
      const error = yield* sendWith(options(vonage.baseUrl), otp).pipe(Effect.flip)

      expect(error).toMatchObject({ provider: "vonage", message: "unexpected answer: no message id" })
    }))

  it.scoped("reports the HTTP status when the error body is not Vonage's", () =>
    Effect.gen(function*() {
      const vonage = yield* startHttpStub(() => ({ status: 502, json: "Bad Gateway" }))
      const error = yield* sendWith(options(vonage.baseUrl), otp).pipe(Effect.flip)

      expect(error).toMatchObject({ provider: "vonage", status: 502, message: "HTTP 502" })
    }))

  it.scoped("gives up after the default timeout when Vonage does not answer", () =>
    Effect.gen(function*() {
      const vonage = yield* startHttpStub(() => "hang")
      const fiber = yield* sendWith(options(vonage.baseUrl), otp).pipe(Effect.flip, Effect.fork)
      yield* Queue.take(vonage.requests)
      yield* TestClock.adjust("10 seconds")
      const error = yield* Fiber.join(fiber)

      expect(error).toMatchObject({ provider: "vonage", message: "no answer within 10s" })
    }))

  it.scoped("turns a refused connection into an SmsError without the secret", () =>
    Effect.gen(function*() {
      const port = yield* unusedPort
      const error = yield* sendWith(options(`http://127.0.0.1:${port}`), otp).pipe(Effect.flip)

      expect(error).toMatchObject({ provider: "vonage", message: "request failed: Transport (ECONNREFUSED)" })
      expect(JSON.stringify(error)).not.toContain(apiSecret)
      expect(String(error)).not.toContain(apiSecret)
    }))
})
