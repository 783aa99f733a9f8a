/**
 * SMS_TEMPLATE through a running server: every texted code (phone sign-up, /otp, phone change) goes out in the
 * configured body, and the code in it verifies.
 */
import { expect } from "@effect/vitest"
import { Effect, Ref } from "effect"
import { SentSms } from "../../../src/platform/sms/SmsSender.js"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, authClient, call, PASSWORD, raw, uniquePhone } from "./AcceptanceKit.js"

const TEMPLATE = "Gatehouse:\n{{.Code}} is your code. Never share it."
const BODY = /^Gatehouse:\n(\d{6}) is your code\. Never share it\.$/

const textsTo = (phone: string) =>
  Effect.map(Effect.flatMap(SentSms, ({ messages }) => Ref.get(messages)), (all) => all.filter((sms) => sms.to === phone))

/** The code of a text that follows TEMPLATE; fails the test when the body does not. */
const codeIn = (body: string): string => {
  const match = BODY.exec(body)
  expect(match, `"${body}" follows SMS_TEMPLATE`).not.toBeNull()
  return match![1]!
}

acceptance({ AUTH_EXTERNAL_PHONE_ENABLED: "true", AUTH_SMS_MAX_FREQUENCY: "0", AUTH_SMS_TEMPLATE: TEMPLATE })(
  "SMS_TEMPLATE",
  (it) => {
    it.effect("the sign-up text, the sign-in text and the phone-change text follow the template, and their codes verify", () =>
      Effect.gen(function*() {
        const url = yield* ServerUrl
        const phone = uniquePhone()
        const { client } = authClient(url)
        expect((yield* call(() => client.signUp({ phone, password: PASSWORD }))).error).toBeNull()
        const [signUp] = yield* textsTo(phone.slice(1))
        const confirmed = yield* call(() => client.verifyOtp({ phone, token: codeIn(signUp!.body), type: "sms" }))
        expect(confirmed.error).toBeNull()

        expect((yield* call(() => client.signInWithOtp({ phone }))).error).toBeNull()
        const signIn = (yield* textsTo(phone.slice(1))).at(-1)!
        const signedIn = yield* call(() => client.verifyOtp({ phone, token: codeIn(signIn.body), type: "sms" }))
        expect(signedIn.error).toBeNull()

        const next = uniquePhone()
        const bearer = signedIn.data.session!.access_token
        expect((yield* raw(url, "/user", { method: "PUT", bearer, body: { phone: next } })).status).toBe(200)
        const [change] = yield* textsTo(next.slice(1))
        const changed = yield* call(() => client.verifyOtp({ phone: next, token: codeIn(change!.body), type: "phone_change" }))
        expect(changed.error).toBeNull()
        expect(changed.data.user?.phone).toBe(next.slice(1))
      }))
  }
)
