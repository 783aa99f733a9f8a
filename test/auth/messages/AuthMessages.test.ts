import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Ref } from "effect"
import type { CodeColumn } from "../../../src/auth/domain/SentCodeState.js"
import { hasCodeAction } from "../../../src/auth/domain/SmsTemplate.js"
import { AuthMessages, type MessageToken } from "../../../src/auth/messages/AuthMessages.js"
import { BUILT_IN_TEXTS } from "../../../src/auth/messages/BuiltInTexts.js"
import { type MailTemplateName, MailTemplates } from "../../../src/auth/messages/MailTemplates.js"
import { RecipientSendsRepo } from "../../../src/auth/messages/RecipientSendsRepo.js"
import { SendQuotaRepo } from "../../../src/auth/messages/SendQuotaRepo.js"
import { configLayer } from "../../../src/config/AppConfig.js"
import { MemoryMailer, SentMail } from "../../../src/platform/mail/Mailer.js"
import { SecureRandom } from "../../../src/platform/SecureRandom.js"
import { MemorySmsSender, SentSms } from "../../../src/platform/sms/SmsSender.js"
import { testConfig } from "../../support/TestServer.js"

const messagesWith = (templates: Partial<Record<MailTemplateName, string>>) =>
  AuthMessages.DefaultWithoutDependencies.pipe(
    Layer.provideMerge(Layer.mergeAll(
      MailTemplates.Test(templates),
      SendQuotaRepo.Test,
      RecipientSendsRepo.Test,
      MemoryMailer,
      MemorySmsSender,
      SecureRandom.Test,
      configLayer(testConfig({ AUTH_MAILER_SUBJECTS_EMAIL_CHANGE: "Your new address", AUTH_MAILER_URLPATHS_RECOVERY: "/auth/v1/verify" }))
    ))
  )

/** A token as PendingTokens mints it: the code, its stored hash (a stand-in here) and the link token. */
const sent = (link: string | null, otp: string, column: CodeColumn = "confirmation_token"): MessageToken => ({
  userId: "00000000-0000-4000-8000-000000000001",
  column,
  token: { otp, stored: `stored-${otp}`, link, recipient: "to@example.com" }
})

const lastMail = Effect.flatMap(SentMail, ({ mails }) => Effect.map(Ref.get(mails), (sent) => sent.at(-1)!))

describe("AuthMessages with templates", () => {
  it.effect("a configured template is the whole body, with every variable GoTrue offers", () =>
    Effect.gen(function*() {
      const messages = yield* AuthMessages
      yield* messages.confirmation("a@example.com", sent("hash1", "123456"), "http://localhost:3000/welcome", Effect.void)
      yield* messages.settled
      const mail = yield* lastMail
      expect(mail.subject).toBe("Confirm Your Signup")
      expect(mail.text).toBeUndefined()
      expect(mail.html).toBe(
        "http://localhost:3000|a@example.com|http://localhost:9999/verify?token=hash1&amp;type=signup&amp;redirect_to=http%3A%2F%2Flocalhost%3A3000%2Fwelcome" +
          "||123456|hash1|http://localhost:3000/welcome"
      )
    }).pipe(Effect.provide(messagesWith({
      confirmation: "{{ .SiteURL }}|{{ .Email }}|{{ .ConfirmationURL }}|{{ .NewEmail }}|{{ .Token }}|{{ .TokenHash }}|{{ .RedirectTo }}"
    }))))

  it.effect("the email change names both addresses, whichever one it goes to", () =>
    Effect.gen(function*() {
      const messages = yield* AuthMessages
      yield* messages.emailChange("old@example.com", { email: "old@example.com", newEmail: "new@example.com" }, sent("h", "654321", "email_change_token_current"), "http://localhost:3000")
      const mail = yield* lastMail
      expect(mail).toMatchObject({ to: "old@example.com", subject: "Your new address", html: "old@example.com to new@example.com: 654321" })
    }).pipe(Effect.provide(messagesWith({ emailChange: "{{ .Email }} to {{ .NewEmail }}: {{ .Token }}" }))))

  it.effect("without a template the built-in body carries the link and the code, in HTML and text", () =>
    Effect.gen(function*() {
      const messages = yield* AuthMessages
      yield* messages.confirmation("a@example.com", sent("hash1", "123456"), "http://localhost:3000", Effect.void)
      yield* messages.settled
      const mail = yield* lastMail
      expect(mail.html).toContain(`href="http://localhost:9999/verify?token=hash1&amp;type=signup&amp;redirect_to=`)
      expect(mail.html).toContain("123456")
      expect(mail.text).toContain("Code: 123456")
    }).pipe(Effect.provide(messagesWith({ emailChange: "only the email change has one" }))))

  it.effect("recovery and magic-link mails use their own templates and subjects, on the recovery path, with their type", () =>
    Effect.gen(function*() {
      const messages = yield* AuthMessages
      yield* messages.link("recovery", "a@example.com", sent("h1", "111111", "recovery_token"), "http://localhost:3000", Effect.void)
      yield* messages.settled
      expect(yield* lastMail).toMatchObject({
        subject: "Reset Your Password",
        html: "reset a@example.com 111111 http://localhost:9999/auth/v1/verify?token=h1&amp;type=recovery&amp;redirect_to=http%3A%2F%2Flocalhost%3A3000"
      })
      yield* messages.link("magiclink", "a@example.com", sent("h2", "222222", "recovery_token"), "http://localhost:3000", Effect.void)
      yield* messages.settled
      const magic = yield* lastMail
      expect(magic.subject).toBe("Your Magic Link")
      // No magic-link template: the built-in body, with the link and the code.
      expect(magic.text).toContain("http://localhost:9999/auth/v1/verify?token=h2&type=magiclink&redirect_to=")
      expect(magic.text).toContain("Code: 222222")
    }).pipe(Effect.provide(messagesWith({ recovery: "reset {{ .Email }} {{ .Token }} {{ .ConfirmationURL }}" }))))

  it.effect("hands the mailer the mail's facts: its kind, code and action link, and where the code waits", () =>
    Effect.gen(function*() {
      const messages = yield* AuthMessages
      yield* messages.link("magiclink", "a@example.com", sent("h3", "333333", "recovery_token"), "http://localhost:3000", Effect.void)
      yield* messages.settled
      expect((yield* lastMail).about).toEqual({
        type: "magiclink",
        code: "333333",
        link: "http://localhost:9999/auth/v1/verify?token=h3&type=magiclink&redirect_to=http%3A%2F%2Flocalhost%3A3000",
        pending: { userId: "00000000-0000-4000-8000-000000000001", column: "recovery_token", codeHash: "stored-333333" }
      })
      yield* messages.reauthentication("a@example.com", sent(null, "444444", "reauthentication_token"))
      expect((yield* lastMail).about).toMatchObject({ type: "reauthentication", code: "444444", link: null })
    }).pipe(Effect.provide(messagesWith({}))))

  it.effect("hands the SMS sender a text's facts, with the type its code is verified as", () =>
    Effect.gen(function*() {
      const messages = yield* AuthMessages
      yield* messages.text("15550001111", sent(null, "555555", "phone_change_token"), "phone_change")
      const texts = yield* Effect.flatMap(SentSms, ({ messages }) => Ref.get(messages))
      expect(texts.at(-1)).toEqual({
        to: "15550001111",
        body: "Your code is 555555",
        // A text unless the request asked for WhatsApp; the code rides beside the body for a provider's own template.
        channel: "sms",
        code: "555555",
        about: {
          type: "phone_change",
          code: "555555",
          link: null,
          pending: { userId: "00000000-0000-4000-8000-000000000001", column: "phone_change_token", codeHash: "stored-555555" }
        }
      })
    }).pipe(Effect.provide(messagesWith({}))))
})

describe("the built-in texts", () => {
  it("English is GoTrue's: its subjects are the MAILER_SUBJECTS_* defaults, and its text SMS_TEMPLATE's", () => {
    expect(Object.fromEntries(Object.entries(BUILT_IN_TEXTS.en.mail).map(([kind, texts]) => [kind, texts.subject]))).toStrictEqual({
      invite: "You have been invited",
      confirmation: "Confirm Your Signup",
      recovery: "Reset Your Password",
      magicLink: "Your Magic Link",
      emailChange: "Confirm Email Change",
      reauthentication: "Confirm reauthentication"
    })
    expect(BUILT_IN_TEXTS.en.sms).toBe("Your code is {{ .Code }}")
  })

  it("every locale has every mail's subject and heading, the labels, a text that carries the code, and the page", () => {
    for (const texts of Object.values(BUILT_IN_TEXTS)) {
      expect(Object.keys(texts.mail).sort()).toStrictEqual(Object.keys(BUILT_IN_TEXTS.en.mail).sort())
      for (const { heading, subject } of Object.values(texts.mail)) expect([heading, subject]).not.toContain("")
      expect(hasCodeAction(texts.sms)).toBe(true)
      expect(Object.values(texts.confirmPage)).not.toContain("")
    }
  })
})
