import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { AuthConfig } from "../../config/AuthConfig.js"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { AuthMetrics, countTagged } from "../metrics/AuthMetrics.js"
import { Mailer } from "../../platform/mail/Mailer.js"
import type { MessageFacts } from "../../platform/mail/Outbox.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { SmsSender } from "../../platform/sms/SmsSender.js"
import { AuthError } from "../domain/AuthError.js"
import { emailActionLink } from "../domain/EmailActionLink.js"
import { overRecipientLimit, type RecipientLimit, recipientDigestKey, recipientKey } from "../domain/RecipientSendWindow.js"
import { overSendQuota, sendQuotaWindow } from "../domain/SendQuotaWindow.js"
import { escapeHtml } from "../../platform/http/Html.js"
import type { CodeColumn } from "../domain/SentCodeState.js"
import { hasCodeAction, renderSmsTemplate } from "../domain/SmsTemplate.js"
import type { TextChannel } from "../domain/TextChannel.js"
import { chooseLocale, type MessageLocale } from "../../domain/MessageLocale.js"
import type { UserRow } from "../domain/UserRow.js"
import type { IssuedToken } from "../users/PendingTokens.js"
import { BUILT_IN_TEXTS, type LocaleTexts, type MailKind } from "./BuiltInTexts.js"
import type { MailTemplateVariables } from "./MailTemplate.js"
import { MailTemplates } from "./MailTemplates.js"
import { RecipientSendsRepo } from "./RecipientSendsRepo.js"
import { type SendChannel, SendQuotaRepo } from "./SendQuotaRepo.js"
import { traced } from "../../platform/Traced.js"

/** The built-in body of a mail of `kind` in `texts`' language: its heading, the link (if it has one) and the code. */
const mailBody = (texts: LocaleTexts, kind: MailKind, url: string | undefined, otp: string) => {
  const intro = texts.mail[kind].heading
  return {
    html: `<h2>${escapeHtml(intro)}</h2>${url === undefined ? "" : `<p><a href="${escapeHtml(url)}">${escapeHtml(texts.followLink)}</a></p>`}` +
      `<p>${escapeHtml(texts.enterCode)} ${escapeHtml(otp)}</p>`,
    text: `${intro}\n\n${url === undefined ? "" : `${url}\n\n`}${texts.codeLabel} ${otp}\n`
  }
}

type MailBody = { readonly html: string; readonly text?: string }

/** The code a message carries, and where it waits: the user and the users column that holds its hash. */
export interface MessageToken {
  readonly userId: string
  readonly column: CodeColumn
  readonly token: IssuedToken
  /** The user's user_metadata.locale as stored (anything an app wrote there): the first say in the message's language. */
  readonly localePreference?: unknown
}

/** The MessageToken of `token`, waiting in `column` of `user`, whose metadata may name the language to write in. */
export const messageTokenFor = (user: UserRow, column: CodeColumn, token: IssuedToken): MessageToken => ({
  userId: user.id,
  column,
  token,
  localePreference: user.raw_user_meta_data?.["locale"]
})

/** What a text is for: the verifyOtp type of its code, or a reauthentication nonce. */
export type TextType = "sms" | "phone_change" | "reauthentication"

/** Where an MFA text's code waits, as its facts name it: the mfa_challenges row whose id they carry. */
export const MFA_CHALLENGE_COLUMN = "mfa_challenges.otp_code"

/** The message's facts, handed to the Mailer or SmsSender beside it (the development outbox keeps them). */
const factsOf = (type: string, sent: MessageToken, link: string | null): MessageFacts => ({
  type,
  code: sent.token.otp,
  link,
  pending: { userId: sent.userId, column: sent.column, codeHash: sent.token.stored }
})

/** How long a stopping server waits for mails it has accepted but not yet handed to the mail server. */
const DRAIN_DELIVERIES = Duration.seconds(10)

/**
 * The messages the account flows send. A mail with a configured template (MAILER_TEMPLATES_*) gets the rendered
 * template as its only (HTML) body; without one, or when it cannot be had, the built-in body with the link and
 * the code. Each message is written in one locale (see localeFor), whose subjects, templates and texted body the
 * operator may set (the *_<LOCALE> settings); what they leave out is that locale's built-in text.
 *
 * Every mail and text leaves through `send`, `post` and `text`, so RATE_LIMIT_EMAIL_SENT and RATE_LIMIT_SMS_SENT
 * are claimed there, from the counters all instances share, and so are RATE_LIMIT_EMAIL_PER_RECIPIENT and
 * RATE_LIMIT_SMS_PER_RECIPIENT, from the recipient's window (first: a recipient past its own limit spends nothing of
 * the instance's quota); a message that then fails to go out is given back to both, so nobody loses quota for
 * something that never arrived. Each goes with its facts (kind, code, link, the column its
 * code waits in), which the embedded default's outbox lists and SMTP and the SMS providers leave out.
 *
 * The mails that an unknown address would not get (a sign-up confirmation, a recovery or magic link) are posted:
 * the request claims the quota and answers, and the mail is rendered and delivered after it. The answer then takes
 * as long whether or not a mail goes out, so its timing cannot tell which addresses have accounts (the mail server's
 * latency would, by tens of milliseconds). A posted mail that fails is logged, and `undelivered` puts back what the
 * request set up for it, so the user can ask again at once.
 */
export class AuthMessages extends Effect.Service<AuthMessages>()("auth/AuthMessages", {
  scoped: Effect.gen(function*() {
    const config = yield* AuthConfig
    const platform = yield* PlatformConfig
    const mailer = yield* Mailer
    const sms = yield* SmsSender
    const random = yield* SecureRandom
    const templates = yield* MailTemplates
    const quotas = yield* SendQuotaRepo
    const recipients = yield* RecipientSendsRepo
    const deliveries = yield* FiberSet.make<void>()
    // Added after the set, so it runs before the set interrupts what is left: accepted mails get a chance to go.
    yield* Effect.addFinalizer(() => FiberSet.awaitEmpty(deliveries).pipe(Effect.timeout(DRAIN_DELIVERIES), Effect.ignore))

    const digestKey = recipientDigestKey(Redacted.value(config.jwt.secret))
    const toRule = (setting: { readonly events: number; readonly per: Duration.Duration }): RecipientLimit => ({
      limit: setting.events,
      periodMs: Math.max(1, Math.ceil(Duration.toMillis(setting.per)))
    })
    const perRecipient: Readonly<Record<SendChannel, Option.Option<RecipientLimit>>> = {
      email: Option.map(config.rateLimit.emailPerRecipient, toRule),
      sms: Option.map(config.rateLimit.smsPerRecipient, toRule)
    }

    /** Takes one message from the recipient's window, when the channel has a per-recipient limit. */
    const claimRecipient = (channel: SendChannel, to: string): Effect.Effect<Effect.Effect<void>, AuthError> =>
      Option.match(perRecipient[channel], {
        onNone: () => Effect.succeed(Effect.void),
        onSome: (rule) =>
          Effect.gen(function*() {
            const key = recipientKey(digestKey, channel, to)
            const nowMs = yield* Clock.currentTimeMillis
            const send = yield* recipients.claim(channel, key, nowMs, rule)
            if (!send.allowed) {
              yield* countTagged(AuthMetrics.rateLimited, "limit", channel === "email" ? "email_per_recipient" : "sms_per_recipient")
              return yield* overRecipientLimit(channel, send.retryAfterMs)
            }
            return recipients.giveBack(channel, key, nowMs)
          })
      })

    /**
     * Takes one message to `to` from its recipient's window and then from the channel's quota: refused with
     * Retry-After once either is spent. What it returns gives back both.
     */
    const claimQuota = (channel: SendChannel, to: string): Effect.Effect<Effect.Effect<void>, AuthError> =>
      Effect.flatMap(claimRecipient(channel, to), (recipientBack) =>
        Effect.gen(function*() {
          const quota = channel === "email" ? config.rateLimit.emailSent : config.rateLimit.smsSent
          const window = sendQuotaWindow(quota.per, new Date(yield* Clock.currentTimeMillis))
          if (!(yield* quotas.claim(channel, window.start, quota.events))) {
            yield* countTagged(AuthMetrics.rateLimited, "limit", channel === "email" ? "email_sent" : "sms_sent")
            return yield* overSendQuota(channel, window.secondsLeft)
          }
          return Effect.zipRight(quotas.giveBack(channel, window.start), recipientBack)
        }).pipe(Effect.tapError(() => recipientBack)))

    /** Runs `deliver` within the channel's quota, giving the message back when it fails. */
    const withinQuota = <A>(channel: SendChannel, to: string, deliver: Effect.Effect<A, AuthError>): Effect.Effect<A, AuthError> =>
      Effect.flatMap(claimQuota(channel, to), (release) => Effect.tapError(deliver, () => release))

    const deliverMail = (to: string, subject: string, body: MailBody, what: string, about: MessageFacts): Effect.Effect<void, AuthError> =>
      mailer.send({ to, subject, ...body, about }).pipe(
        Effect.tap(() => countTagged(AuthMetrics.messagesSent, "channel", "email")),
        Effect.tapError((error) => Effect.logError(`could not send ${what} email`, error)),
        Effect.mapError(() => AuthError.of(500, "unexpected_failure", `Error sending ${what} email`))
      )

    /** A mail the request waits for: its failure is the request's. */
    const send = (to: string, subject: string, body: MailBody, what: string, about: MessageFacts) =>
      withinQuota("email", to, deliverMail(to, subject, body, what, about))

    /** A mail delivered after the answer (see above); only an exhausted quota fails the request. */
    const post = (
      to: string,
      subject: string,
      body: Effect.Effect<MailBody>,
      what: string,
      about: MessageFacts,
      undelivered: Effect.Effect<void>
    ) =>
      Effect.flatMap(claimQuota("email", to), (release) =>
        FiberSet.run(
          deliveries,
          Effect.flatMap(body, (rendered) => deliverMail(to, subject, rendered, what, about)).pipe(
            Effect.catchAll(() => Effect.zipRight(release, undelivered))
          )
        )).pipe(Effect.asVoid)

    const { localization } = config.mailer
    const settingsOf = (locale: MessageLocale) => localization.byLocale.get(locale)
    const smsTemplateOf = (locale: MessageLocale): string =>
      Option.getOrElse(Option.flatMap(Option.fromNullable(settingsOf(locale)), (own) => own.smsTemplate), () => BUILT_IN_TEXTS[locale].sms)

    // GoTrue sends such a template as written, and so do we; but a text without its code is surely a mistake.
    for (const locale of localization.offer.offered) {
      if (!hasCodeAction(smsTemplateOf(locale))) {
        const setting = locale === localization.offer.fallback ? "SMS_TEMPLATE" : `SMS_TEMPLATE_${locale.toUpperCase()}`
        yield* Effect.logWarning(`${setting} has no {{ .Code }}: texts will be sent without their code`)
      }
    }

    /**
     * The language of a message to the owner of `sent`: their user_metadata.locale, else the language the request
     * that makes the message asks for (every message is made while serving one; its Accept-Language is read from
     * the request in context rather than threaded through every flow), else MAILER_DEFAULT_LOCALE.
     */
    const localeFor = (sent: MessageToken): Effect.Effect<MessageLocale> =>
      Effect.map(Effect.serviceOption(HttpServerRequest.HttpServerRequest), (request) =>
        chooseLocale(localization.offer, {
          preference: sent.localePreference,
          acceptLanguage: Option.getOrUndefined(Option.flatMap(request, (r) => Option.fromNullable(r.headers["accept-language"])))
        }))

    const subjectOf = (kind: MailKind, locale: MessageLocale): string =>
      settingsOf(locale)?.subjects[kind] ?? BUILT_IN_TEXTS[locale].mail[kind].subject

    // Every mail with a link is made from a token minted for mailing, which has one.
    const linked = (sent: MessageToken): { readonly link: string; readonly otp: string } => ({ link: sent.token.link!, otp: sent.token.otp })

    const actionUrl = (path: string, link: string, type: string, redirectTo: string): string =>
      emailActionLink(platform.api.externalUrl, path, link, type, redirectTo)

    // GoTrue's templates see the site URL in every mail; the rest is the message's own.
    const bodyOf = (
      kind: MailKind,
      locale: MessageLocale,
      content: { readonly url: string | undefined; readonly otp: string },
      variables: Omit<MailTemplateVariables, "SiteURL">
    ): Effect.Effect<MailBody> =>
      Effect.map(
        templates.render(kind, locale, { SiteURL: config.siteUrl, ...variables }),
        Option.match({ onNone: () => mailBody(BUILT_IN_TEXTS[locale], kind, content.url, content.otp), onSome: (html) => ({ html }) })
      )

    /** A sign-up confirmation, posted (see above). */
    const confirmation = traced("AuthMessages.confirmation")(function*(
      email: string,
      sent: MessageToken,
      redirectTo: string,
      undelivered: Effect.Effect<void>
    ): Effect.fn.Return<void, AuthError> {
      const { link, otp } = linked(sent)
      const url = actionUrl(config.mailer.urlPaths.confirmation, link, "signup", redirectTo)
      const locale = yield* localeFor(sent)
      const body = bodyOf("confirmation", locale, { url, otp }, {
        Email: email,
        ConfirmationURL: url,
        Token: otp,
        TokenHash: link,
        RedirectTo: redirectTo
      })
      yield* post(email, subjectOf("confirmation", locale), body, "confirmation", factsOf("signup", sent, url), undelivered)
    })

    /** An invitation: its code is stored in confirmation_token, and its link confirms the address and signs in. */
    const invite = traced("AuthMessages.invite")(function*(
      email: string,
      sent: MessageToken,
      redirectTo: string
    ): Effect.fn.Return<void, AuthError> {
      const { link, otp } = linked(sent)
      const url = actionUrl(config.mailer.urlPaths.invite, link, "invite", redirectTo)
      const locale = yield* localeFor(sent)
      const body = yield* bodyOf("invite", locale, { url, otp }, {
        Email: email,
        ConfirmationURL: url,
        Token: otp,
        TokenHash: link,
        RedirectTo: redirectTo
      })
      yield* send(email, subjectOf("invite", locale), body, "invite", factsOf("invite", sent, url))
    })

    /** A recovery or magic-link mail, posted (see above): both carry a code stored in recovery_token and a link. */
    const link = traced("AuthMessages.link")(function*(
      kind: "recovery" | "magiclink",
      email: string,
      sent: MessageToken,
      redirectTo: string,
      undelivered: Effect.Effect<void>
    ): Effect.fn.Return<void, AuthError> {
      const { link, otp } = linked(sent)
      const url = actionUrl(config.mailer.urlPaths.recovery, link, kind, redirectTo)
      const recovery = kind === "recovery"
      const mailKind = recovery ? "recovery" : "magicLink"
      const locale = yield* localeFor(sent)
      const body = bodyOf(mailKind, locale, { url, otp }, {
        Email: email,
        ConfirmationURL: url,
        Token: otp,
        TokenHash: link,
        RedirectTo: redirectTo
      })
      yield* post(
        email,
        subjectOf(mailKind, locale),
        body,
        recovery ? "recovery" : "magic link",
        factsOf(kind, sent, url),
        undelivered
      )
    })

    /** One of the change's confirmations, to `to`: the new address, or the current one when both must confirm. */
    const emailChange = traced("AuthMessages.emailChange")(function*(
      to: string,
      change: { readonly email: string; readonly newEmail: string },
      sent: MessageToken,
      redirectTo: string
    ): Effect.fn.Return<void, AuthError> {
      const { link, otp } = linked(sent)
      const url = actionUrl(config.mailer.urlPaths.emailChange, link, "email_change", redirectTo)
      const locale = yield* localeFor(sent)
      const body = yield* bodyOf("emailChange", locale, { url, otp }, {
        Email: change.email,
        NewEmail: change.newEmail,
        ConfirmationURL: url,
        Token: otp,
        TokenHash: link,
        RedirectTo: redirectTo
      })
      yield* send(to, subjectOf("emailChange", locale), body, "email change", factsOf("email_change", sent, url))
    })

    const reauthentication = traced("AuthMessages.reauthentication")(function*(
      email: string,
      sent: MessageToken
    ): Effect.fn.Return<void, AuthError> {
      const otp = sent.token.otp
      const locale = yield* localeFor(sent)
      const body = yield* bodyOf("reauthentication", locale, { url: undefined, otp }, { Email: email, Token: otp })
      yield* send(email, subjectOf("reauthentication", locale), body, "reauthentication", factsOf("reauthentication", sent, null))
    })

    /** The code to text to `phone`: the fixed SMS_TEST_OTP code for a test number, otherwise a fresh one. */
    const smsOtp = (phone: string): Effect.Effect<string> => {
      const fixed = config.sms.testOtp.get(phone)
      return fixed !== undefined ? Effect.succeed(fixed) : random.digits(config.sms.otpLength)
    }

    /**
     * Sends one text within RATE_LIMIT_SMS_SENT (a WhatsApp message counts as a text, as in GoTrue); a failure is
     * 422 sms_send_failed, logged.
     */
    const deliverText = (to: string, body: string, channel: TextChannel, code: string, about: MessageFacts) =>
      withinQuota(
        "sms",
        to,
        sms.send({ to, body, channel, code, about }).pipe(
          Effect.tap(() => countTagged(AuthMetrics.messagesSent, "channel", channel)),
          Effect.tapError((error) => Effect.logError("could not send SMS", error)),
          Effect.mapError((error) => AuthError.of(422, "sms_send_failed", `Error sending SMS: ${error.message}`))
        )
      )

    /**
     * Texts the code in the SMS_TEMPLATE body (of the message's locale); the answer is the provider's message id ("test-otp" for a test
     * number, as in GoTrue).
     */
    const text = traced("AuthMessages.text")(function*(
      phone: string,
      sent: MessageToken,
      type: TextType,
      channel: TextChannel = "sms"
    ): Effect.fn.Return<string, AuthError> {
      const otp = sent.token.otp
      // Test numbers receive nothing, so they count against no quota: their code is known, and they work with no
      // provider configured.
      if (config.sms.testOtp.has(phone)) return "test-otp"
      const template = smsTemplateOf(yield* localeFor(sent))
      const receipt = yield* deliverText(phone, renderSmsTemplate(template, otp), channel, otp, factsOf(type, sent, null))
      return receipt.messageId
    })

    /**
     * Texts a phone factor's challenge code in the MFA_PHONE_TEMPLATE body. Unlike sign-in codes, SMS_TEST_OTP has no
     * say here (GoTrue texts every MFA code), and the text counts against RATE_LIMIT_SMS_SENT like every other. A
     * failure is 422 sms_send_failed, as for every other text (GoTrue: 500 "error sending message", which auth-js
     * would retry as a server fault). The facts name the challenge, which holds the code (the
     * outbox shows the code without judging it: the challenge is not a users column).
     */
    const mfaText = traced("AuthMessages.mfaText")(function*(
      phone: string,
      code: string,
      challenge: { readonly userId: string; readonly challengeId: string },
      channel: TextChannel
    ): Effect.fn.Return<void, AuthError> {
      const about: MessageFacts = {
        type: "mfa",
        code,
        link: null,
        pending: { userId: challenge.userId, column: MFA_CHALLENGE_COLUMN, codeHash: challenge.challengeId }
      }
      yield* deliverText(phone, renderSmsTemplate(config.mfa.phone.template, code), channel, code, about)
    })

    /** Waits until every posted mail has been delivered or given up. */
    const settled: Effect.Effect<void> = FiberSet.awaitEmpty(deliveries)

    return { confirmation, invite, link, emailChange, reauthentication, smsOtp, text, mfaText, settled } as const
  }),
  dependencies: [MailTemplates.Default, SendQuotaRepo.Default, RecipientSendsRepo.Default]
}) {}
