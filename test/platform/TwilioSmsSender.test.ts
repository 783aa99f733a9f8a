import { FetchHttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Queue, Redacted, TestClock } from "effect"
import { type Sms, SmsSender } from "../../src/platform/sms/SmsSender.js"
import { TwilioSmsSender, type TwilioSmsSenderOptions } from "../../src/platform/sms/TwilioSmsSender.js"
import { formFields, startHttpStub, unusedPort } from "./LocalServers.js"

const authToken = "twilio-auth-token-9f8e7d"

const options = (baseUrl: string, messageServiceSid: string): TwilioSmsSenderOptions => ({
  accountSid: "AC0123456789abcdef",
  authToken: Redacted.make(authToken),
  messageServiceSid,
  baseUrl
})

const sendWith = (settings: TwilioSmsSenderOptions, sms: Sms) =>
  Effect.flatMap(SmsSender, (sender) => sender.send(sms)).pipe(
    Effect.provide(TwilioSmsSender(settings).pipe(Layer.provide(FetchHttpClient.layer)))
  )

const otp: Sms = { to: "15551234567", body: "Your code is 123456" }

describe("TwilioSmsSender", () => {
  it.scoped("posts the form Twilio expects, with a Messaging Service SID as MessagingServiceSid", () =>
    Effect.gen(function*() {
      const twilio = yield* startHttpStub(() => ({
        status: 201,
        json: { sid: "SM0123456789abcdef", status: "queued", error_code: null, error_message: null }
      }))
      const receipt = yield* sendWith(options(twilio.baseUrl, "MG0123456789abcdef"), otp)

      expect(receipt).toEqual({ messageId: "SM0123456789abcdef" })
      const request = yield* Queue.take(twilio.requests)
      expect(request.method).toBe("POST")
      expect(request.url).toBe("/2010-04-01/Accounts/AC0123456789abcdef/Messages.json")
      expect(request.headers.authorization).toBe(
        `Basic ${Buffer.from(`AC0123456789abcdef:${authToken}`).toString("base64")}`
      )
      expect(request.headers["content-type"]).toBe("application/x-www-form-urlencoded")
      expect(formFields(request.body)).toEqual([
        ["To", "+15551234567"],
        ["Body", "Your code is 123456"],
        ["MessagingServiceSid", "MG0123456789abcdef"]
      ])
    }))

  it.scoped("sends a phone number configured as the sender in From", () =>
    Effect.gen(function*() {
      const twilio = yield* startHttpStub(() => ({ status: 201, json: { sid: "SM1", status: "queued" } }))
      yield* sendWith(options(twilio.baseUrl, "+15550001111"), { to: "447700900123", body: "Código: 654321 ✓" })

      const request = yield* Queue.take(twilio.requests)
      expect(formFields(request.body)).toEqual([
        ["To", "+447700900123"],
        ["Body", "Código: 654321 ✓"],
        ["From", "+15550001111"]
      ])
    }))

  it.scoped("a WhatsApp message goes to whatsapp: addresses with the body, a phone-number sender prefixed too", () =>
    Effect.gen(function*() {
      const twilio = yield* startHttpStub(() => ({ status: 201, json: { sid: "SM3", status: "queued" } }))
      yield* sendWith(options(twilio.baseUrl, "+15550001111"), { ...otp, channel: "whatsapp", code: "123456" })
      yield* sendWith(options(twilio.baseUrl, "MG0123456789abcdef"), { ...otp, channel: "whatsapp", code: "123456" })

      expect(formFields((yield* Queue.take(twilio.requests)).body)).toEqual([
        ["To", "whatsapp:+15551234567"],
        ["From", "whatsapp:+15550001111"],
        ["Body", "Your code is 123456"]
      ])
      expect(formFields((yield* Queue.take(twilio.requests)).body)).toEqual([
        ["To", "whatsapp:+15551234567"],
        ["MessagingServiceSid", "MG0123456789abcdef"],
        ["Body", "Your code is 123456"]
      ])
    }))

  it.scoped("with SMS_TWILIO_CONTENT_SID a WhatsApp message is that template with the code as variable 1; texts are unchanged", () =>
    Effect.gen(function*() {
      const twilio = yield* startHttpStub(() => ({ status: 201, json: { sid: "SM4", status: "queued" } }))
      const settings = { ...options(twilio.baseUrl, "+15550001111"), contentSid: "HX0123456789abcdef" }
      yield* sendWith(settings, { ...otp, channel: "whatsapp", code: "123456" })
      yield* sendWith(settings, { ...otp, code: "123456" })

      expect(formFields((yield* Queue.take(twilio.requests)).body)).toEqual([
        ["To", "whatsapp:+15551234567"],
        ["From", "whatsapp:+15550001111"],
        ["ContentSid", "HX0123456789abcdef"],
        ["ContentVariables", JSON.stringify({ "1": "123456" })]
      ])
      expect(formFields((yield* Queue.take(twilio.requests)).body)).toEqual([
        ["To", "+15551234567"],
        ["Body", "Your code is 123456"],
        ["From", "+15550001111"]
      ])
    }))

  it.scoped("carries Twilio's error message and code, and never the auth token", () =>
    Effect.gen(function*() {
      const twilio = yield* startHttpStub(() => ({
        status: 400,
        json: {
          code: 21211,
          message: "The 'To' number +15551234567 is not a valid phone number.",
          more_info: "https://www.twilio.com/docs/errors/21211",
          status: 400
        }
      }))
      const error = yield* sendWith(options(twilio.baseUrl, "MG1"), otp).pipe(Effect.flip)

      expect(error).toMatchObject({
        _tag: "SmsError",
        provider: "twilio",
        status: 400,
        code: "21211",
        message: "The 'To' number +15551234567 is not a valid phone number."
      })
      expect(JSON.stringify(error)).not.toContain(authToken)
      expect(String(error)).not.toContain(authToken)
    }))

  it.scoped("treats a message Twilio reports as failed as an error", () =>
    Effect.gen(function*() {
      const twilio = yield* startHttpStub(() => ({
        status: 201,
        json: { sid: "SM2", status: "failed", error_code: 30006, error_message: "Landline or unreachable carrier" }
      }))
      const error = yield* sendWith(options(twilio.baseUrl, "MG1"), otp).pipe(Effect.flip)

      expect(error).toMatchObject({
        provider: "twilio",
        code: "30006",
        message: "message SM2 failed: Landline or unreachable carrier"
      })
    }))

  it.scoped("reports the HTTP status when the error body is not Twilio's", () =>
    Effect.gen(function*() {
      const twilio = yield* startHttpStub(() => ({ status: 502, json: "Bad Gateway" }))
      const error = yield* sendWith(options(twilio.baseUrl, "MG1"), otp).pipe(Effect.flip)

      expect(error).toMatchObject({ provider: "twilio", status: 502, message: "HTTP 502" })
    }))

  it.scoped("gives up after the timeout when Twilio does not answer", () =>
    Effect.gen(function*() {
      const twilio = yield* startHttpStub(() => "hang")
      const fiber = yield* sendWith({ ...options(twilio.baseUrl, "MG1"), timeout: "5 seconds" }, otp).pipe(
        Effect.flip,
        Effect.fork
      )
      yield* Queue.take(twilio.requests)
      yield* TestClock.adjust("5 seconds")
      const error = yield* Fiber.join(fiber)

      expect(error).toMatchObject({ provider: "twilio", message: "no answer within 5s" })
    }))

  it.scoped("turns a refused connection into an SmsError", () =>
    Effect.gen(function*() {
      const port = yield* unusedPort
      const error = yield* sendWith(options(`http://127.0.0.1:${port}`, "MG1"), otp).pipe(Effect.flip)

      expect(error).toMatchObject({ provider: "twilio", message: "request failed: Transport (ECONNREFUSED)" })
      expect(JSON.stringify(error)).not.toContain(authToken)
    }))
})
