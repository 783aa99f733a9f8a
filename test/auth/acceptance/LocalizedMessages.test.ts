/**
 * MAILER_LOCALES through a running server: each mail and text is written in the user's user_metadata.locale, else the
 * request's Accept-Language, else MAILER_DEFAULT_LOCALE, among the offered locales only; an operator's subject or
 * text for a locale wins over that locale's built-in one. Unset, everything is English, as it always was.
 */
import { expect } from "@effect/vitest"
import { Effect, Ref } from "effect"
import type { Mail } from "../../../src/platform/mail/Mailer.js"
import { SentSms } from "../../../src/platform/sms/SmsSender.js"
import { ServerUrl } from "../../support/TestServer.js"
import { acceptance, adminJwt, authClient, call, mailTo, PASSWORD, raw, settledMail, uniqueEmail, uniquePhone } from "./AcceptanceKit.js"

/** Signs up by email with auth-js, sending `acceptLanguage` if given; the confirmation mail. */
const signUp = (tag: string, options: { readonly locale?: unknown; readonly acceptLanguage?: string } = {}) =>
  Effect.gen(function*() {
    const url = yield* ServerUrl
    const email = uniqueEmail(tag)
    const { client } = authClient(url, options.acceptLanguage === undefined ? {} : { headers: { "Accept-Language": options.acceptLanguage } })
    const data = options.locale === undefined ? {} : { locale: options.locale }
    expect((yield* call(() => client.signUp({ email, password: PASSWORD, options: { data } }))).error).toBeNull()
    yield* settledMail
    const mails = yield* mailTo(email)
    expect(mails).toHaveLength(1)
    return { email, mail: mails[0]!, client }
  })

/** The last mail to `email`, once every posted mail went out. */
const lastMailTo = (email: string) =>
  Effect.zipRight(settledMail, Effect.map(mailTo(email), (mails) => mails.at(-1)!))

/** The code at the end of a built-in text body, whatever its language calls it. */
const codeIn = (mail: Mail): string => {
  const code = /(\d{6,10})\n$/.exec(mail.text ?? "")?.[1]
  expect(code, mail.text).toBeDefined()
  return code!
}

const textsTo = (phone: string) =>
  Effect.map(Effect.flatMap(SentSms, ({ messages }) => Ref.get(messages)), (all) => all.filter((sms) => sms.to === phone))

/** The built-in body's pieces, which say which language it is in. */
const expectBuiltIn = (mail: Mail, expected: { subject: string; heading: string; followLink?: string; enterCode: string; codeLabel: string }) => {
  expect(mail.subject).toBe(expected.subject)
  expect(mail.html.startsWith(`<h2>${expected.heading}</h2>`)).toBe(true)
  if (expected.followLink !== undefined) expect(mail.html).toContain(`">${expected.followLink}</a></p>`)
  expect(mail.html).toMatch(new RegExp(`<p>${expected.enterCode} \\d{6}</p>$`))
  expect(mail.text).toMatch(new RegExp(`^${expected.heading}\\n\\n[\\s\\S]*${expected.codeLabel} \\d{6}\\n$`))
}

const GERMAN_SIGNUP = {
  subject: "Bestätigen Sie Ihre Registrierung",
  heading: "Bestätigen Sie Ihre Registrierung",
  followLink: "Diesem Link folgen",
  enterCode: "Oder geben Sie diesen Code ein:",
  codeLabel: "Code:"
}

acceptance({
  AUTH_MAILER_LOCALES: "en, de, fr, es, pt",
  AUTH_MAILER_DEFAULT_LOCALE: "es",
  AUTH_MAILER_SUBJECTS_RECOVERY: "Operator's default-locale subject",
  AUTH_MAILER_SUBJECTS_MAGIC_LINK_FR: "Votre lien, de la part de l'opérateur",
  AUTH_SMTP_MAX_FREQUENCY: "0",
  AUTH_EXTERNAL_PHONE_ENABLED: "true",
  AUTH_SMS_MAX_FREQUENCY: "0",
  AUTH_SMS_TEMPLATE_DE: "Gatehouse: {{ .Code }} ist Ihr Code."
})("mail and texts in the user's language", (it) => {
  it.effect("user_metadata.locale=de gets German, whatever the browser asks for; the German code verifies", () =>
    Effect.gen(function*() {
      const { client, email, mail } = yield* signUp("de", { locale: "de", acceptLanguage: "fr" })
      expectBuiltIn(mail, GERMAN_SIGNUP)
      const { error } = yield* call(() => client.verifyOtp({ email, token: codeIn(mail), type: "signup" }))
      expect(error).toBeNull()
    }))

  it.effect("without a locale in the metadata, Accept-Language: fr gets French", () =>
    Effect.gen(function*() {
      const { mail } = yield* signUp("fr", { acceptLanguage: "fr-CH, de;q=0.5" })
      expectBuiltIn(mail, {
        subject: "Confirmez votre inscription",
        heading: "Confirmez votre inscription",
        followLink: "Suivez ce lien",
        enterCode: "Ou saisissez ce code :",
        codeLabel: "Code :"
      })
    }))

  it.effect("a region falls back to its language: pt-BR in the metadata gets Portuguese", () =>
    Effect.gen(function*() {
      const { mail } = yield* signUp("pt", { locale: "pt-BR" })
      expect(mail.subject).toBe("Confirme a sua inscrição")
      expect(mail.html).toContain("Ou digite este código:")
    }))

  it.effect("an unknown or absent locale and language get the default (Spanish here)", () =>
    Effect.gen(function*() {
      for (const options of [{}, { locale: "it", acceptLanguage: "it, xx;q=0.5" }, { locale: 42 }]) {
        const { mail } = yield* signUp("default", options)
        expectBuiltIn(mail, {
          subject: "Confirma tu registro",
          heading: "Confirma tu registro",
          followLink: "Sigue este enlace",
          enterCode: "O introduce este código:",
          codeLabel: "Código:"
        })
      }
    }))

  it.effect("an operator's subject wins in its locale: the un-suffixed one is the default locale's", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const french = yield* signUp("magic-fr", { locale: "fr" })
      // A magic link goes to a confirmed address (an unconfirmed one gets its confirmation again).
      expect((yield* call(() => french.client.verifyOtp({ email: french.email, token: codeIn(french.mail), type: "signup" }))).error).toBeNull()
      expect((yield* call(() => french.client.signInWithOtp({ email: french.email }))).error).toBeNull()
      const magic = yield* lastMailTo(french.email)
      expect(magic.subject).toBe("Votre lien, de la part de l'opérateur")
      expect(magic.html.startsWith("<h2>Connectez-vous avec ce lien magique</h2>")).toBe(true)

      const plain = yield* signUp("recover-es")
      expect((yield* call(() => authClient(url).client.resetPasswordForEmail(plain.email))).error).toBeNull()
      const recovery = yield* lastMailTo(plain.email)
      expect(recovery.subject).toBe("Operator's default-locale subject")
      expect(recovery.html.startsWith("<h2>Restablece tu contraseña</h2>")).toBe(true)

      const german = yield* signUp("recover-de", { locale: "de" })
      expect((yield* call(() => authClient(url).client.resetPasswordForEmail(german.email))).error).toBeNull()
      const deRecovery = yield* lastMailTo(german.email)
      expect(deRecovery.subject).toBe("Passwort zurücksetzen")
    }))

  it.effect("an invitation follows the locale in its data; reauthentication follows the user's", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const invited = uniqueEmail("invite-pt")
      const answer = yield* raw(url, "/invite", { bearer: adminJwt(), body: { email: invited, data: { locale: "pt" } } })
      expect(answer.status).toBe(200)
      const invite = yield* lastMailTo(invited)
      expect(invite.subject).toBe("Recebeu um convite")
      expect(invite.html).toContain(">Siga este link</a>")

      const { client, email, mail } = yield* signUp("reauth-de", { locale: "de" })
      const { data } = yield* call(() => client.verifyOtp({ email, token: codeIn(mail), type: "signup" }))
      expect((yield* raw(url, "/reauthenticate", { bearer: data.session!.access_token })).status).toBe(200)
      const reauth = yield* lastMailTo(email)
      expectBuiltIn(reauth, {
        subject: "Bestätigen Sie Ihre Identität",
        heading: "Geben Sie diesen Code ein, um zu bestätigen, dass Sie es sind",
        enterCode: "Oder geben Sie diesen Code ein:",
        codeLabel: "Code:"
      })
    }))

  it.effect("texts: an operator's SMS_TEMPLATE_DE for German users, the built-in Portuguese for pt; both codes verify", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { client } = authClient(url)
      for (const [locale, body] of [["de", /^Gatehouse: (\d{6}) ist Ihr Code\.$/], ["pt", /^O seu código é (\d{6})$/]] as const) {
        const phone = uniquePhone()
        expect((yield* call(() => client.signUp({ phone, password: PASSWORD, options: { data: { locale } } }))).error).toBeNull()
        const [text] = yield* textsTo(phone.slice(1))
        const code = body.exec(text!.body)?.[1]
        expect(code, text!.body).toBeDefined()
        expect((yield* call(() => client.verifyOtp({ phone, token: code!, type: "sms" }))).error).toBeNull()
      }
    }))
})

acceptance({ AUTH_EXTERNAL_PHONE_ENABLED: "true" })("without MAILER_LOCALES", (it) => {
  it.effect("every mail and text is English, byte for byte as before, whatever the metadata and the browser say", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { mail } = yield* signUp("en", { locale: "de", acceptLanguage: "de" })
      expect(mail.subject).toBe("Confirm Your Signup")
      const link = /href="([^"]+)"/.exec(mail.html)![1]!
      const code = codeIn(mail)
      expect(mail.html).toBe(`<h2>Confirm your signup</h2><p><a href="${link}">Follow this link</a></p><p>Or enter this code: ${code}</p>`)
      expect(mail.text).toBe(`Confirm your signup\n\n${link.replaceAll("&amp;", "&")}\n\nCode: ${code}\n`)

      const phone = uniquePhone()
      const { client } = authClient(url, { headers: { "Accept-Language": "de" } })
      expect((yield* call(() => client.signUp({ phone, password: PASSWORD, options: { data: { locale: "de" } } }))).error).toBeNull()
      const [text] = yield* textsTo(phone.slice(1))
      expect(text!.body).toMatch(/^Your code is \d{6}$/)
    }))
})
