import { availableParallelism } from "node:os"
import { FetchHttpClient } from "@effect/platform"
import { Layer, Option } from "effect"
import type { JWK } from "jose"
import { type AppConfig, smsProviderReady } from "../config/AppConfig.js"
import { type Captcha, CaptchaLive, UnconfiguredCaptcha } from "./Captcha.js"
import { LogMailer, type Mailer, OutboxMailer, SmtpMailer } from "./Mailer.js"
import { MessagebirdSmsSender } from "./MessagebirdSmsSender.js"
import { BcryptPasswordHasher, bcryptPermits, type PasswordHasher } from "./PasswordHasher.js"
import { SecureRandom } from "./SecureRandom.js"
import { Outbox } from "./Outbox.js"
import { LogSmsSender, OutboxSmsSender, type SmsSender, UnconfiguredSmsSender } from "./SmsSender.js"
import { TextlocalSmsSender } from "./TextlocalSmsSender.js"
import { type TokenSignerConfigError, TokenSignerLive, type TokenSigner } from "./TokenSigner.js"
import { TwilioSmsSender } from "./TwilioSmsSender.js"
import { VonageSmsSender } from "./VonageSmsSender.js"

export type Ports = TokenSigner | PasswordHasher | Mailer | SmsSender | SecureRandom | Outbox | Captcha

const definitely = <A>(option: Option.Option<A>): A => Option.getOrThrow(option)

/** Mail goes over SMTP when SMTP_HOST is set; otherwise (the embedded default) to the log. */
export const mailerFor = (config: AppConfig): Layer.Layer<Mailer> =>
  Option.match(config.smtp.host, {
    onNone: () => LogMailer,
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
 * The configured SMS provider. Without a complete one (config warned at start-up), the embedded default writes
 * texts to the log and production fails each send, as GoTrue does.
 */
export const smsSenderFor = (config: AppConfig): Layer.Layer<SmsSender> => {
  if (!smsProviderReady(config.sms) || Option.isNone(config.sms.provider)) {
    return config.mode === "embedded"
      ? LogSmsSender
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
          messageServiceSid: definitely(twilio.messageServiceSid)
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

/**
 * The embedded default (no DATABASE_URL, no SMTP_HOST): nothing is really delivered by email, so mail and texts
 * are also kept in the Outbox, which the outbox page shows.
 */
export const outboxEnabled = (config: AppConfig): boolean => config.mode === "embedded" && Option.isNone(config.smtp.host)

/**
 * The Mailer and SmsSender, with the outbox in front of them in the embedded default. The Outbox is in the graph
 * either way (an empty list costs nothing), so what the routes need does not depend on the configuration.
 */
export const messagingFor = (config: AppConfig): Layer.Layer<Mailer | SmsSender | Outbox> => {
  const mailer = mailerFor(config)
  const sms = smsSenderFor(config)
  const senders = outboxEnabled(config)
    ? Layer.merge(OutboxMailer.pipe(Layer.provide(mailer)), OutboxSmsSender.pipe(Layer.provide(sms)))
    : Layer.merge(mailer, sms)
  return senders.pipe(Layer.provideMerge(Outbox.Default))
}

export const tokenSignerFor = (config: AppConfig): Layer.Layer<TokenSigner, TokenSignerConfigError> =>
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
export const captchaFor = (config: AppConfig): Layer.Layer<Captcha> => {
  const { provider, secret, timeout, verifyUrl } = config.security.captcha
  return Option.match(secret, {
    onNone: () => UnconfiguredCaptcha,
    onSome: (secret) => CaptchaLive({ provider, secret, timeout, verifyUrl: Option.getOrUndefined(verifyUrl) })
  })
}

/** The production implementation of every external dependency, chosen from configuration. */
export const PortsLive = (config: AppConfig): Layer.Layer<Ports, TokenSignerConfigError> =>
  Layer.mergeAll(
    tokenSignerFor(config),
    BcryptPasswordHasher({ concurrency: bcryptPermits(availableParallelism(), config.workers) }),
    messagingFor(config),
    SecureRandom.Live,
    captchaFor(config)
  )
