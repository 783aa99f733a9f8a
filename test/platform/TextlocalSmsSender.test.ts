import { FetchHttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Queue, Redacted, TestClock } from "effect"
import { type Sms, SmsSender } from "../../src/platform/sms/SmsSender.js"
import { TextlocalSmsSender, type TextlocalSmsSenderOptions } from "../../src/platform/sms/TextlocalSmsSender.js"
import { formFields, startHttpStub, unusedPort } from "./LocalServers.js"

const apiKey = "textlocal-api-key-7a6b5c"

const options = (baseUrl: string): TextlocalSmsSenderOptions => ({
  apiKey: Redacted.make(apiKey),
  sender: "Gatehouse",
  baseUrl
})

const sendWith = (settings: TextlocalSmsSenderOptions, sms: Sms) =>
  Effect.flatMap(SmsSender, (sender) => sender.send(sms)).pipe(
    Effect.provide(TextlocalSmsSender(settings).pipe(Layer.provide(FetchHttpClient.layer)))
  )

const otp: Sms = { to: "447123456789", body: "Your code is 123456" }

const accepted = {
  balance: 1162,
  batch_id: 123456789,
  cost: 1,
  num_messages: 1,
  message: { num_parts: 1, sender: "Gatehouse", content: "Your code is 123456" },
  receipt_url: "",
  custom: "",
  messages: [{ id: "1151346216", recipient: 447123456789 }],
  status: "success"
}

describe("TextlocalSmsSender", () => {
  it.scoped("posts the form Textlocal expects, with the key in the body", () =>
    Effect.gen(function*() {
      const textlocal = yield* startHttpStub(() => ({ status: 200, json: accepted }))
      const receipt = yield* sendWith(options(textlocal.baseUrl), otp)

      expect(receipt).toEqual({ messageId: "1151346216" })
      const request = yield* Queue.take(textlocal.requests)
      expect(request.method).toBe("POST")
      expect(request.url).toBe("/send/")
      expect(request.headers["content-type"]).toBe("application/x-www-form-urlencoded")
      expect(request.headers.authorization).toBeUndefined()
      expect(formFields(request.body)).toEqual([
        ["apikey", apiKey],
        ["sender", "Gatehouse"],
        ["numbers", "447123456789"],
        ["message", "Your code is 123456"]
      ])
    }))

  it.scoped("keeps a non-ASCII message intact in the form", () =>
    Effect.gen(function*() {
      const textlocal = yield* startHttpStub(() => ({ status: 200, json: accepted }))
      yield* sendWith(options(textlocal.baseUrl), { to: "919876543210", body: "Código: 654321 ✓" })

      const request = yield* Queue.take(textlocal.requests)
      expect(formFields(request.body)).toContainEqual(["message", "Código: 654321 ✓"])
      expect(formFields(request.body)).toContainEqual(["numbers", "919876543210"])
    }))

  it.scoped("accepts a numeric message id", () =>
    Effect.gen(function*() {
      const textlocal = yield* startHttpStub(() => ({
        status: 200,
        json: { ...accepted, messages: [{ id: 1151346217, recipient: 447123456789 }] }
      }))
      const receipt = yield* sendWith(options(textlocal.baseUrl), otp)

      expect(receipt).toEqual({ messageId: "1151346217" })
    }))

  it.scoped("carries Textlocal's error message and code from a 200 failure, and never the key", () =>
    Effect.gen(function*() {
      const textlocal = yield* startHttpStub(() => ({
        status: 200,
        json: { errors: [{ code: 3, message: "Invalid login details" }], status: "failure" }
      }))
      const error = yield* sendWith(options(textlocal.baseUrl), otp).pipe(Effect.flip)

      expect(error).toMatchObject({
        _tag: "SmsError",
        provider: "textlocal",
        status: 200,
        code: "3",
        message: "Invalid login details"
      })
      expect(JSON.stringify(error)).not.toContain(apiKey)
      expect(String(error)).not.toContain(apiKey)
    }))

  it.scoped("joins several errors and keeps the first code", () =>
    Effect.gen(function*() {
      const textlocal = yield* startHttpStub(() => ({
        status: 200,
        json: {
          errors: [{ code: 4, message: "No recipients specified" }, { code: 7, message: "Insufficient credits" }],
          status: "failure"
        }
      }))
      const error = yield* sendWith(options(textlocal.baseUrl), otp).pipe(Effect.flip)

      expect(error).toMatchObject({
        provider: "textlocal",
        code: "4",
        message: "No recipients specified; Insufficient credits"
      })
    }))

  it.scoped("rejects a success without a message id", () =>
    Effect.gen(function*() {
      const textlocal = yield* startHttpStub(() => ({ status: 200, json: { status: "success", messages: [] } }))
      const error = yield* sendWith(options(textlocal.baseUrl), otp).pipe(Effect.flip)

      expect(error).toMatchObject({ provider: "textlocal", message: "unexpected answer: no message id" })
    }))

  it.scoped("reports the HTTP status when the error body is not Textlocal's", () =>
    Effect.gen(function*() {
      const textlocal = yield* startHttpStub(() => ({ status: 503, json: "Service Unavailable" }))
      const error = yield* sendWith(options(textlocal.baseUrl), otp).pipe(Effect.flip)

      expect(error).toMatchObject({ provider: "textlocal", status: 503, message: "HTTP 503" })
    }))

  it.scoped("gives up after the timeout when Textlocal does not answer", () =>
    Effect.gen(function*() {
      const textlocal = yield* startHttpStub(() => "hang")
      const fiber = yield* sendWith({ ...options(textlocal.baseUrl), timeout: "3 seconds" }, otp).pipe(
        Effect.flip,
        Effect.fork
      )
      yield* Queue.take(textlocal.requests)
      yield* TestClock.adjust("3 seconds")
      const error = yield* Fiber.join(fiber)

      expect(error).toMatchObject({ provider: "textlocal", message: "no answer within 3s" })
    }))

  it.scoped("turns a refused connection into an SmsError without the key", () =>
    Effect.gen(function*() {
      const port = yield* unusedPort
      const error = yield* sendWith(options(`http://127.0.0.1:${port}`), otp).pipe(Effect.flip)

      expect(error).toMatchObject({ provider: "textlocal", message: "request failed: Transport (ECONNREFUSED)" })
      expect(JSON.stringify(error)).not.toContain(apiKey)
      expect(String(error)).not.toContain(apiKey)
    }))
})
