import { Clock, Effect, Option } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { AuthMetrics, countTagged } from "../../platform/AuthMetrics.js"
import { Mailer } from "../../platform/Mailer.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { SmsSender } from "../../platform/SmsSender.js"
import { AuthError } from "../domain/AuthError.js"
import { emailActionLink } from "../domain/EmailActionLink.js"
import { overSendQuota, sendQuotaWindow } from "../domain/SendQuotaWindow.js"
import { escapeHtml } from "../../platform/Html.js"
import { hasCodeAction, renderSmsTemplate } from "../domain/SmsTemplate.js"
import type { MailTemplateVariables } from "./MailTemplate.js"
import { type MailTemplateName, MailTemplates } from "./MailTemplates.js"
import { type SendChannel, SendQuotaRepo } from "./SendQuotaRepo.js"

const mailBody = (intro: string, url: string | undefined, otp: string) => ({
  html: `<h2>${escapeHtml(intro)}</h2>${url === undefined ? "" : `<p><a href="${escapeHtml(url)}">Follow this link</a></p>`}` +
    `<p>Or enter this code: ${escapeHtml(otp)}</p>`,
  text: `${intro}\n\n${url === undefined ? "" : `${url}\n\n`}Code: ${otp}\n`
})

/**
 * The messages the account flows send. A mail with a configured template (MAILER_TEMPLATES_*) gets the rendered
 * template as its only (HTML) body; without one, or when it cannot be had, the built-in body with the link and
 * the code.
 *
 * Every mail and text leaves through `send` and `text`, so RATE_LIMIT_EMAIL_SENT and RATE_LIMIT_SMS_SENT are
 * claimed there, from the counters all instances share; a message that then fails to go out is given back, so
 * nobody loses quota for something that never arrived.
 */
export class AuthMessages extends Effect.Service<AuthMessages>()("auth/AuthMessages", {
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const mailer = yield* Mailer
    const sms = yield* SmsSender
    const random = yield* SecureRandom
    const templates = yield* MailTemplates
    const quotas = yield* SendQuotaRepo

    /** Runs `deliver` within the channel's quota: refused with Retry-After once it is spent for this window. */
    const withinQuota = <A>(channel: SendChannel, deliver: Effect.Effect<A, AuthError>): Effect.Effect<A, AuthError> =>
      Effect.gen(function*() {
        const quota = channel === "email" ? config.rateLimit.emailSent : config.rateLimit.smsSent
        const window = sendQuotaWindow(quota.per, new Date(yield* Clock.currentTimeMillis))
        if (!(yield* quotas.claim(channel, window.start, quota.events))) {
          yield* countTagged(AuthMetrics.rateLimited, "limit", channel === "email" ? "email_sent" : "sms_sent")
          return yield* overSendQuota(channel, window.secondsLeft)
        }
        return yield* deliver.pipe(Effect.tapError(() => quotas.giveBack(channel, window.start)))
      })

    // GoTrue sends such a template as written, and so do we; but a text without its code is surely a mistake.
    if (!hasCodeAction(config.sms.template)) {
      yield* Effect.logWarning("SMS_TEMPLATE has no {{ .Code }}: texts will be sent without their code")
    }

    const actionUrl = (path: string, tokenHash: string, type: string, redirectTo: string): string =>
      emailActionLink(config.api.externalUrl, path, tokenHash, type, redirectTo)

    const send = (to: string, subject: string, body: { readonly html: string; readonly text?: string }, what: string) =>
      withinQuota(
        "email",
        mailer.send({ to, subject, ...body }).pipe(
          Effect.tap(() => countTagged(AuthMetrics.messagesSent, "channel", "email")),
          Effect.tapError((error) => Effect.logError(`could not send ${what} email`, error)),
          Effect.mapError(() => AuthError.of(500, "unexpected_failure", `Error sending ${what} email`))
        )
      )

    // GoTrue's templates see the site URL in every mail; the rest is the message's own.
    const bodyOf = (
      name: MailTemplateName,
      builtIn: { readonly html: string; readonly text: string },
      variables: Omit<MailTemplateVariables, "SiteURL">
    ): Effect.Effect<{ readonly html: string; readonly text?: string }> =>
      Effect.map(
        templates.render(name, { SiteURL: config.siteUrl, ...variables }),
        Option.match({ onNone: () => builtIn, onSome: (html) => ({ html }) })
      )

    const confirmation = Effect.fn("AuthMessages.confirmation")(function*(
      email: string,
      tokenHash: string,
      otp: string,
      redirectTo: string
    ): Effect.fn.Return<void, AuthError> {
      const url = actionUrl(config.mailer.urlPaths.confirmation, tokenHash, "signup", redirectTo)
      const body = yield* bodyOf("confirmation", mailBody("Confirm your signup", url, otp), {
        Email: email,
        ConfirmationURL: url,
        Token: otp,
        TokenHash: tokenHash,
        RedirectTo: redirectTo
      })
      yield* send(email, config.mailer.subjects.confirmation, body, "confirmation")
    })

    /** An invitation: its code is stored in confirmation_token, and its link confirms the address and signs in. */
    const invite = Effect.fn("AuthMessages.invite")(function*(
      email: string,
      tokenHash: string,
      otp: string,
      redirectTo: string
    ): Effect.fn.Return<void, AuthError> {
      const url = actionUrl(config.mailer.urlPaths.invite, tokenHash, "invite", redirectTo)
      const body = yield* bodyOf("invite", mailBody("You have been invited", url, otp), {
        Email: email,
        ConfirmationURL: url,
        Token: otp,
        TokenHash: tokenHash,
        RedirectTo: redirectTo
      })
      yield* send(email, config.mailer.subjects.invite, body, "invite")
    })

    /** A recovery or magic-link mail: both carry a code stored in recovery_token and a link on the recovery path. */
    const link = Effect.fn("AuthMessages.link")(function*(
      kind: "recovery" | "magiclink",
      email: string,
      tokenHash: string,
      otp: string,
      redirectTo: string
    ): Effect.fn.Return<void, AuthError> {
      const url = actionUrl(config.mailer.urlPaths.recovery, tokenHash, kind, redirectTo)
      const recovery = kind === "recovery"
      const body = yield* bodyOf(
        recovery ? "recovery" : "magicLink",
        mailBody(recovery ? "Reset your password" : "Sign in with this magic link", url, otp),
        { Email: email, ConfirmationURL: url, Token: otp, TokenHash: tokenHash, RedirectTo: redirectTo }
      )
      yield* send(email, recovery ? config.mailer.subjects.recovery : config.mailer.subjects.magicLink, body, recovery ? "recovery" : "magic link")
    })

    /** One of the change's confirmations, to `to`: the new address, or the current one when both must confirm. */
    const emailChange = Effect.fn("AuthMessages.emailChange")(function*(
      to: string,
      change: { readonly email: string; readonly newEmail: string },
      tokenHash: string,
      otp: string,
      redirectTo: string
    ): Effect.fn.Return<void, AuthError> {
      const url = actionUrl(config.mailer.urlPaths.emailChange, tokenHash, "email_change", redirectTo)
      const body = yield* bodyOf("emailChange", mailBody("Confirm the change of your email address", url, otp), {
        Email: change.email,
        NewEmail: change.newEmail,
        ConfirmationURL: url,
        Token: otp,
        TokenHash: tokenHash,
        RedirectTo: redirectTo
      })
      yield* send(to, config.mailer.subjects.emailChange, body, "email change")
    })

    const reauthentication = Effect.fn("AuthMessages.reauthentication")(function*(
      email: string,
      otp: string
    ): Effect.fn.Return<void, AuthError> {
      yield* send(email, "Confirm reauthentication", mailBody("Enter this code to confirm it is you", undefined, otp), "reauthentication")
    })

    /** The code to text to `phone`: the fixed SMS_TEST_OTP code for a test number, otherwise a fresh one. */
    const smsOtp = (phone: string): Effect.Effect<string> => {
      const fixed = config.sms.testOtp.get(phone)
      return fixed !== undefined ? Effect.succeed(fixed) : random.digits(config.sms.otpLength)
    }

    /**
     * Texts the code in the SMS_TEMPLATE body; the answer is the provider's message id ("test-otp" for a test
     * number, as in GoTrue).
     */
    const text = Effect.fn("AuthMessages.text")(function*(phone: string, otp: string): Effect.fn.Return<string, AuthError> {
      // Test numbers receive nothing, so they count against no quota: their code is known, and they work with no
      // provider configured.
      if (config.sms.testOtp.has(phone)) return "test-otp"
      const receipt = yield* withinQuota(
        "sms",
        sms.send({ to: phone, body: renderSmsTemplate(config.sms.template, otp) }).pipe(
          Effect.tap(() => countTagged(AuthMetrics.messagesSent, "channel", "sms")),
          Effect.tapError((error) => Effect.logError("could not send SMS", error)),
          Effect.mapError((error) => AuthError.of(422, "sms_send_failed", `Error sending SMS: ${error.message}`))
        )
      )
      return receipt.messageId
    })

    return { confirmation, invite, link, emailChange, reauthentication, smsOtp, text } as const
  }),
  dependencies: [MailTemplates.Default, SendQuotaRepo.Default]
}) {}
