import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { JWK } from "jose"
import { type AuthConfig, smsProviderReady } from "../config/AuthConfig.js"
import type { PlatformConfig } from "../config/PlatformConfig.js"
import { type Captcha, CaptchaLive, UnconfiguredCaptcha } from "./Captcha.js"
import { outboxPageUrl } from "./http/OutboxHttp.js"
import { type Mailer, OutboxMailer, SmtpMailer } from "./mail/Mailer.js"
import { MessagebirdSmsSender } from "./sms/MessagebirdSmsSender.js"
import { containerCpus } from "./process/ContainerCpus.js"
import { BcryptPasswordHasher, bcryptPermits, type PasswordHasher } from "./PasswordHasher.js"
import { SecureRandom } from "./SecureRandom.js"
import type { Outbox } from "./mail/Outbox.js"
import { OutboxSmsSender, type SmsSender, UnconfiguredSmsSender } from "./sms/SmsSender.js"
import { TextlocalSmsSender } from "./sms/TextlocalSmsSender.js"
import { type TokenSignerConfigError, TokenSignerLive, type TokenSigner } from "./TokenSigner.js"
import { TwilioSmsSender } from "./sms/TwilioSmsSender.js"
import { VonageSmsSender } from "./sms/VonageSmsSender.js"

export type Ports = TokenSigner | PasswordHasher | Mailer | SmsSender | SecureRandom | Captcha

/**
 * What the ports are chosen from: the platform's settings and auth's (SMTP, SMS, JWT, captcha), whose ports these are
 * until a second product sends mail or signs JWTs.
 */
type PortSettings = PlatformConfig & AuthConfig

const definitely = <A>(option: Option.Option<A>): A => Option.getOrThrow(option)

/**
 * The embedded default (no DATABASE_URL) delivers nothing it has no server for: mail without SMTP_HOST, texts without
 * a complete SMS provider. It keeps them in the Outbox instead, which the outbox page shows. Production requires
 * SMTP_HOST, and fails a text it cannot send (as GoTrue does), so it has no outbox.
 */
export const mailToOutbox = (config: PortSettings): boolean => config.mode === "embedded" && Option.isNone(config.smtp.host)

export const textsToOutbox = (config: PortSettings): boolean => config.mode === "embedded" && !smsProviderReady(config.sms)

export const outboxEnabled = (config: PortSettings): boolean => mailToOutbox(config) || textsToOutbox(config)

const pageOf = (config: PortSettings): string => outboxPageUrl(config.api.host, config.api.port)

/** Mail goes over SMTP when SMTP_HOST is set; otherwise (only the embedded default may leave it out) to the outbox. */
export const mailerFor = (config: PortSettings): Layer.Layer<Mailer, never, Outbox> =>
  Option.match(config.smtp.host, {
    onNone: () => OutboxMailer(pageOf(config)),
    onSome: (host) =>
      SmtpMailer({
        host,
        port: config.smtp.port,
        ...Option.match(config.smtp.user, { onNone: () => ({}), onSome: (user) => ({ user }) }),
        ...Option.match(config.smtp.pass, { onNone: () => ({}), onSome: (pass) => ({ pass }) }),
        adminEmail: config.smtp.adminEmail,
        senderName: config.smtp.senderName
      })
  })

/**
 * The configured SMS provider. Without a complete one (config warned at start-up), the embedded default keeps texts
 * in the outbox and production fails each send, as GoTrue does.
 */
export const smsSenderFor = (config: PortSettings): Layer.Layer<SmsSender, never, Outbox> => {
  if (!smsProviderReady(config.sms) || Option.isNone(config.sms.provider)) {
    return textsToOutbox(config)
      ? OutboxSmsSender(pageOf(config))
      : UnconfiguredSmsSender(Option.match(config.sms.provider, {
        onNone: () => "no SMS provider is configured",
        onSome: (name) => `the ${name} SMS provider is missing credentials`
      }))
  }
  const { messagebird, textlocal, twilio, vonage } = config.sms
  const provider = (() => {
    switch (config.sms.provider.value) {
      case "twilio":
        return TwilioSmsSender({
          accountSid: definitely(twilio.accountSid),
          authToken: definitely(twilio.authToken),
          messageServiceSid: definitely(twilio.messageServiceSid),
          contentSid: Option.getOrUndefined(twilio.contentSid)
        })
      case "messagebird":
        return MessagebirdSmsSender({ accessKey: definitely(messagebird.accessKey), originator: definitely(messagebird.originator) })
      case "textlocal":
        return TextlocalSmsSender({ apiKey: definitely(textlocal.apiKey), sender: definitely(textlocal.sender) })
      case "vonage":
        return VonageSmsSender({ apiKey: definitely(vonage.apiKey), apiSecret: definitely(vonage.apiSecret), from: definitely(vonage.from) })
    }
  })()
  return provider.pipe(Layer.provide(FetchHttpClient.layer))
}

/** The Mailer and SmsSender; what they keep in the embedded default goes to the Outbox the caller provides. */
export const messagingFor = (config: PortSettings): Layer.Layer<Mailer | SmsSender, never, Outbox> =>
  Layer.merge(mailerFor(config), smsSenderFor(config))

export const tokenSignerFor = (config: PortSettings): Layer.Layer<TokenSigner, TokenSignerConfigError> =>
  TokenSignerLive({
    secret: config.jwt.secret,
    keys: config.jwt.keys as ReadonlyArray<JWK>,
    ...Option.match(config.jwt.keyId, { onNone: () => ({}), onSome: (keyId) => ({ keyId }) }),
    ...(config.jwt.validMethods.length > 0 ? { validMethods: config.jwt.validMethods } : {})
  })

/**
 * The configured captcha provider. Without a secret captcha is off (config refuses to turn it on without one), and
 * nothing may ask the port.
 */
export const captchaFor = (config: PortSettings): Layer.Layer<Captcha> => {
  const { provider, secret, timeout, verifyUrl } = config.security.captcha
  return Option.match(secret, {
    onNone: () => UnconfiguredCaptcha,
    onSome: (secret) => CaptchaLive({ provider, secret, timeout, verifyUrl: Option.getOrUndefined(verifyUrl) })
  })
}

/**
 * The production implementation of every external dependency, chosen from configuration. The Outbox is the
 * caller's: the embedded default keeps it in the database, a floor this one does not reach.
 */
export const PortsLive = (config: PortSettings): Layer.Layer<Ports, TokenSignerConfigError, Outbox> =>
  Layer.mergeAll(
    tokenSignerFor(config),
    BcryptPasswordHasher({ concurrency: bcryptPermits(containerCpus(), config.workers) }),
    messagingFor(config),
    SecureRandom.Live,
    captchaFor(config)
  )
