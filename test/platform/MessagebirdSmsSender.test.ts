import { FetchHttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Queue, Redacted, TestClock } from "effect"
import { MessagebirdSmsSender, type MessagebirdSmsSenderOptions } from "../../src/platform/sms/MessagebirdSmsSender.js"
import { type Sms, SmsSender } from "../../src/platform/sms/SmsSender.js"
import { formFields, startHttpStub, unusedPort } from "./LocalServers.js"

const accessKey = "live_mb_access_key_5c4b3a"

const options = (baseUrl: string): MessagebirdSmsSenderOptions => ({
  accessKey: Redacted.make(accessKey),
  originator: "Gatehouse",
  baseUrl
})

const sendWith = (settings: MessagebirdSmsSenderOptions, sms: Sms) =>
  Effect.flatMap(SmsSender, (sender) => sender.send(sms)).pipe(
    Effect.provide(MessagebirdSmsSender(settings).pipe(Layer.provide(FetchHttpClient.layer)))
  )

const otp: Sms = { to: "31612345678", body: "Your code is 123456" }

describe("MessagebirdSmsSender", () => {
  it.scoped("refuses a WhatsApp message without calling MessageBird, rather than texting it", () =>
    Effect.gen(function*() {
      const messagebird = yield* startHttpStub(() => ({ status: 201, json: { id: "x" } }))
      const error = yield* sendWith(options(messagebird.baseUrl), { ...otp, channel: "whatsapp" }).pipe(Effect.flip)
      expect(error).toMatchObject({ _tag: "SmsError", provider: "messagebird", message: "messagebird does not send WhatsApp messages" })
      expect(yield* Queue.size(messagebird.requests)).toBe(0)
    }))

  it.scoped("posts the form MessageBird expects with the AccessKey header", () =>
    Effect.gen(function*() {
      const messagebird = yield* startHttpStub(() => ({
        status: 201,
        json: { id: "e8077d803532c0b5937c639b60216938", recipients: { totalCount: 1, totalSentCount: 1 } }
      }))
      const receipt = yield* sendWith(options(messagebird.baseUrl), otp)

      expect(receipt).toEqual({ messageId: "e8077d803532c0b5937c639b60216938" })
      const request = yield* Queue.take(messagebird.requests)
      expect(request.method).toBe("POST")
      expect(request.url).toBe("/messages")
      expect(request.headers.authorization).toBe(`AccessKey ${accessKey}`)
      expect(request.headers["content-type"]).toBe("application/x-www-form-urlencoded")
      expect(formFields(request.body)).toEqual([
        ["originator", "Gatehouse"],
        ["body", "Your code is 123456"],
        ["recipients", "31612345678"],
        ["type", "sms"],
        ["datacoding", "unicode"]
      ])
    }))

  it.scoped("carries MessageBird's error descriptions, and never the access key", () =>
    Effect.gen(function*() {
      const messagebird = yield* startHttpStub(() => ({
        status: 422,
        json: { errors: [{ code: 9, description: "no (correct) recipients found", parameter: "recipients" }] }
      }))
      const error = yield* sendWith(options(messagebird.baseUrl), otp).pipe(Effect.flip)

      expect(error).toMatchObject({
        _tag: "SmsError",
        provider: "messagebird",
        status: 422,
        code: "9",
        message: "no (correct) recipients found"
      })
      expect(JSON.stringify(error)).not.toContain(accessKey)
      expect(String(error)).not.toContain(accessKey)
    }))

  it.scoped("rejects an accepted message that reached no recipient", () =>
    Effect.gen(function*() {
      const messagebird = yield* startHttpStub(() => ({
        status: 201,
        json: { id: "abc", recipients: { totalCount: 1, totalSentCount: 0 } }
      }))
      const error = yield* sendWith(options(messagebird.baseUrl), otp).pipe(Effect.flip)

      expect(error).toMatchObject({ provider: "messagebird", message: "message abc sent to no recipient" })
    }))

  it.scoped("reports the HTTP status when the error body is not MessageBird's", () =>
    Effect.gen(function*() {
      const messagebird = yield* startHttpStub(() => ({ status: 500, json: { oops: true } }))
      const error = yield* sendWith(options(messagebird.baseUrl), otp).pipe(Effect.flip)

      expect(error).toMatchObject({ provider: "messagebird", status: 500, message: "HTTP 500" })
    }))

  it.scoped("gives up after the default timeout when MessageBird does not answer", () =>
    Effect.gen(function*() {
      const messagebird = yield* startHttpStub(() => "hang")
      const fiber = yield* sendWith(options(messagebird.baseUrl), otp).pipe(Effect.flip, Effect.fork)
      yield* Queue.take(messagebird.requests)
      yield* TestClock.adjust("10 seconds")
      const error = yield* Fiber.join(fiber)

      expect(error).toMatchObject({ provider: "messagebird", message: "no answer within 10s" })
    }))

  it.scoped("turns a refused connection into an SmsError", () =>
    Effect.gen(function*() {
      const port = yield* unusedPort
      const error = yield* sendWith(options(`http://127.0.0.1:${port}`), otp).pipe(Effect.flip)

      expect(error).toMatchObject({ provider: "messagebird", message: "request failed: Transport (ECONNREFUSED)" })
    }))
})
