/**
 * channel=whatsapp, as GoTrue serves it at POST /otp, POST /signup and PUT /user: through Twilio, the provider that
 * sends WhatsApp, a new number's confirmation and a known number's code go out on that channel; with any other
 * provider, and with a channel nobody knows, GoTrue's 400.
 */
import { FetchHttpClient } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { AuthApiError } from "@supabase/auth-js"
import { Context, Effect, Layer, Logger, LogLevel, Queue, Redacted, Ref } from "effect"
import { invalidChannelMessage } from "../../../src/auth/domain/TextChannel.js"
import { SentSms } from "../../../src/platform/sms/SmsSender.js"
import { TwilioSmsSender } from "../../../src/platform/sms/TwilioSmsSender.js"
import { ServerUrl, TestServer } from "../../support/TestServer.js"
import { formFields, type RecordedRequest, startHttpStub } from "../../platform/LocalServers.js"
import { acceptance, authClient, call, PASSWORD, raw, uniquePhone, versionedError } from "./AcceptanceKit.js"

const textsTo = (phone: string) =>
  Effect.map(Effect.flatMap(SentSms, ({ messages }) => Ref.get(messages)), (all) => all.filter((sms) => sms.to === phone))

const TWILIO = {
  AUTH_EXTERNAL_PHONE_ENABLED: "true",
  AUTH_SMS_MAX_FREQUENCY: "0",
  AUTH_SMS_PROVIDER: "twilio",
  AUTH_SMS_TWILIO_ACCOUNT_SID: "AC0123456789abcdef",
  AUTH_SMS_TWILIO_AUTH_TOKEN: "twilio-auth-token",
  AUTH_SMS_TWILIO_MESSAGE_SERVICE_SID: "MG0123456789abcdef"
}

acceptance(TWILIO)("/otp channel=whatsapp through Twilio", (it) => {
  it.effect("a new number's confirmation and a known number's code go by WhatsApp, and verify as texted codes do", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      const phone = uniquePhone()
      const stored = phone.slice(1)
      expect((yield* call(() => client.signInWithOtp({ phone, options: { channel: "whatsapp" } }))).error).toBeNull()
      const [confirmation] = yield* textsTo(stored)
      expect(confirmation).toMatchObject({ channel: "whatsapp", body: `Your code is ${confirmation!.code}` })
      expect((yield* call(() => client.verifyOtp({ phone, token: confirmation!.code!, type: "sms" }))).error).toBeNull()

      const again = yield* raw(url, "/otp", { body: { phone, channel: "whatsapp" } })
      expect([again.status, again.json]).toEqual([200, { message_id: expect.stringMatching(/^memory-/) }])
      const code = (yield* textsTo(stored))[1]!
      expect(code.channel).toBe("whatsapp")
      expect((yield* call(() => client.verifyOtp({ phone, token: code.code!, type: "sms" }))).error).toBeNull()

      expect((yield* raw(url, "/otp", { body: { phone } })).status).toBe(200)
      expect((yield* textsTo(stored))[2]!.channel).toBe("sms")
    }))

  it.effect("/signup and a phone change by PUT /user take the channel too, as in GoTrue", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      const phone = uniquePhone()
      expect((yield* call(() => client.signUp({ phone, password: PASSWORD, options: { channel: "whatsapp" } }))).error).toBeNull()
      const [confirmation] = yield* textsTo(phone.slice(1))
      expect(confirmation!.channel).toBe("whatsapp")
      const { data } = yield* call(() => client.verifyOtp({ phone, token: confirmation!.code!, type: "sms" }))
      const accessToken = data.session!.access_token

      const newPhone = uniquePhone()
      const changed = yield* raw(url, "/user", { method: "PUT", bearer: accessToken, body: { phone: newPhone, channel: "whatsapp" } })
      expect(changed.status).toBe(200)
      const [change] = yield* textsTo(newPhone.slice(1))
      expect(change!.channel).toBe("whatsapp")
      const verified = yield* call(() => client.verifyOtp({ phone: newPhone, token: change!.code!, type: "phone_change" }))
      expect(verified.error).toBeNull()
      expect(verified.data.user?.phone).toBe(newPhone.slice(1))

      const unknown = yield* raw(url, "/user", { method: "PUT", bearer: accessToken, body: { phone: uniquePhone(), channel: "pigeon" }, apiVersion: true })
      expect([unknown.status, unknown.json]).toEqual([400, versionedError("validation_failed", invalidChannelMessage)])
    }))

  it.effect("a channel nobody knows is GoTrue's 400, and so is a channel with an email", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const phone = uniquePhone()
      const unknown = yield* raw(url, "/otp", { body: { phone, channel: "pigeon" }, apiVersion: true })
      expect([unknown.status, unknown.json]).toEqual([400, versionedError("validation_failed", invalidChannelMessage)])
      const withEmail = yield* raw(url, "/otp", { body: { email: "a@example.com", channel: "whatsapp" }, apiVersion: true })
      expect([withEmail.status, withEmail.json]).toEqual([
        400,
        versionedError("validation_failed", "Channel should only be specified with Phone OTP")
      ])
      expect(yield* textsTo(phone.slice(1))).toEqual([])
    }))
})

acceptance({
  AUTH_EXTERNAL_PHONE_ENABLED: "true",
  AUTH_SMS_PROVIDER: "messagebird",
  AUTH_SMS_MESSAGEBIRD_ACCESS_KEY: "messagebird-access-key",
  AUTH_SMS_MESSAGEBIRD_ORIGINATOR: "Example"
})("/otp channel=whatsapp through a provider without WhatsApp", (it) => {
  it.effect("is GoTrue's 400 and sends nothing; the sms channel works", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      const phone = uniquePhone()
      const { error } = yield* call(() => client.signInWithOtp({ phone, options: { channel: "whatsapp" } }))
      expect(error).toBeInstanceOf(AuthApiError)
      expect(error).toMatchObject({ status: 400, code: "validation_failed", message: invalidChannelMessage })
      expect(yield* textsTo(phone.slice(1))).toEqual([])
      expect((yield* call(() => client.signInWithOtp({ phone, options: { channel: "sms" } }))).error).toBeNull()
      expect((yield* textsTo(phone.slice(1))).map((sms) => sms.channel)).toEqual(["sms"])

      const signup = yield* raw(url, "/signup", { body: { phone: uniquePhone(), password: PASSWORD, channel: "whatsapp" }, apiVersion: true })
      expect([signup.status, signup.json]).toEqual([400, versionedError("validation_failed", invalidChannelMessage)])
    }))
})

/** What the stand-in for Twilio's API received. */
class TwilioRequests extends Context.Tag("test/WhatsApp/TwilioRequests")<TwilioRequests, Queue.Dequeue<RecordedRequest>>() {}

const TWILIO_AUTH_TOKEN = "twilio-auth-token-whatsapp"

/**
 * A server whose texts go through the real Twilio sender, built from the server's own settings, to a local stand-in
 * for Twilio's API: the requests it records are what Twilio would receive.
 */
const overTwilioApi = (env: Readonly<Record<string, string>>) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const twilio = yield* startHttpStub(() => ({ status: 201, json: { sid: "SM0123456789abcdef", status: "queued" } }))
    const sender = TwilioSmsSender({
      accountSid: env.AUTH_SMS_TWILIO_ACCOUNT_SID!,
      authToken: Redacted.make(env.AUTH_SMS_TWILIO_AUTH_TOKEN!),
      messageServiceSid: env.AUTH_SMS_TWILIO_MESSAGE_SERVICE_SID!,
      contentSid: env.AUTH_SMS_TWILIO_CONTENT_SID,
      baseUrl: twilio.baseUrl
    }).pipe(Layer.provide(FetchHttpClient.layer))
    return Layer.merge(TestServer(env, { smsSender: sender }), Layer.succeed(TwilioRequests, twilio.requests))
  })).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Error)))

const TWILIO_NUMBER = {
  ...TWILIO,
  AUTH_SMS_TWILIO_AUTH_TOKEN: TWILIO_AUTH_TOKEN,
  AUTH_SMS_TWILIO_MESSAGE_SERVICE_SID: "+15550001111",
  AUTH_SMS_TWILIO_CONTENT_SID: "HX0123456789abcdef"
}

layer(overTwilioApi(TWILIO_NUMBER), { timeout: 120_000, excludeTestServices: true })("/otp channel=whatsapp on Twilio's wire", (it) => {
  it.effect("Twilio receives the WhatsApp template with the code, both numbers whatsapp:-prefixed; the code signs in", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const requests = yield* TwilioRequests
      const { client } = authClient(url)
      const phone = uniquePhone()
      const answer = yield* raw(url, "/otp", { body: { phone, channel: "whatsapp" } })
      // A new number's confirmation: GoTrue answers it with no message id.
      expect([answer.status, answer.json]).toEqual([200, {}])

      const request = yield* Queue.take(requests)
      expect([request.method, request.url]).toEqual(["POST", "/2010-04-01/Accounts/AC0123456789abcdef/Messages.json"])
      expect(request.headers.authorization).toBe(`Basic ${Buffer.from(`AC0123456789abcdef:${TWILIO_AUTH_TOKEN}`).toString("base64")}`)
      const fields = formFields(request.body)
      const code = JSON.parse(new Map(fields).get("ContentVariables") ?? "{}")["1"] as string
      expect(code).toMatch(/^[0-9]{6}$/)
      expect(fields).toEqual([
        ["To", `whatsapp:${phone}`],
        ["From", "whatsapp:+15550001111"],
        ["ContentSid", "HX0123456789abcdef"],
        ["ContentVariables", JSON.stringify({ "1": code })]
      ])
      const { data, error } = yield* call(() => client.verifyOtp({ phone, token: code, type: "sms" }))
      expect(error).toBeNull()
      expect(data.user?.phone).toBe(phone.slice(1))

      // The same number by text: the plain SMS form, no whatsapp: prefix and no template.
      const texted = yield* raw(url, "/otp", { body: { phone } })
      expect([texted.status, texted.json]).toEqual([200, { message_id: "SM0123456789abcdef" }])
      const text = formFields((yield* Queue.take(requests)).body)
      expect(text.map(([name]) => name)).toEqual(["To", "Body", "From"])
      expect(text[0]).toEqual(["To", phone])
      expect(text[2]).toEqual(["From", "+15550001111"])
      expect(text[1]![1]).toMatch(/^Your code is [0-9]{6}$/)
    }))
})
