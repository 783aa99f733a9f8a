import type { KeyObject } from "node:crypto"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type { LocaleOffer, MessageLocale } from "../domain/MessageLocale.js"
import type { RequestLimit } from "./RequestLimit.js"

/** GoTrue's fixed floor for recovery and magic-link mails: however low SMTP_MAX_FREQUENCY is, one a minute. */
export const RECOVERY_MIN_INTERVAL: Duration.Duration = Duration.seconds(60)

/**
 * SMTP_MAX_FREQUENCY and SMS_MAX_FREQUENCY when unset: GoTrue's in production, the Supabase local stack's email
 * setting in the embedded default (a development server where a 15-minute wait before a second mail only gets in
 * the way).
 */
export const SEND_FREQUENCY_DEFAULTS = {
  production: { email: Duration.seconds(900), sms: Duration.seconds(60) },
  development: { email: Duration.seconds(1), sms: Duration.seconds(1) }
} as const

export type SmsProviderName = "twilio" | "messagebird" | "textlocal" | "vonage"

/**
 * An external identity provider whose `EXTERNAL_<NAME>_*` variables are read. The config knows no provider by name:
 * the registry in src/auth/oauth derives these from its descriptors, and the server's composition hands them in.
 */
export interface OAuthProviderSpec {
  /** The lowercase name GoTrue uses (`linkedin_oidc`), upper-cased in its variables. */
  readonly name: string
  /** EXTERNAL_<NAME>_URL is required when the provider is enabled (a provider with no public instance, keycloak). */
  readonly urlRequired: boolean
}

export interface OAuthProviderConfig {
  readonly enabled: boolean
  readonly clientId: string
  readonly secret: Option.Option<Redacted.Redacted<string>>
  readonly redirectUri: string
  readonly url: Option.Option<string>
}

export interface EmailTemplateSet<A> {
  readonly invite: A
  readonly confirmation: A
  readonly recovery: A
  readonly magicLink: A
  readonly emailChange: A
  readonly reauthentication: A
}

/** An operator's own wording for one locale: MAILER_SUBJECTS_<KIND>_<LOCALE>, MAILER_TEMPLATES_<KIND>_<LOCALE>, SMS_TEMPLATE_<LOCALE>. */
export interface LocaleSettings {
  readonly subjects: Partial<EmailTemplateSet<string>>
  /** Template URLs, fetched as the un-suffixed MAILER_TEMPLATES_* are. */
  readonly templates: Partial<EmailTemplateSet<string>>
  readonly smsTemplate: Option.Option<string>
}

/**
 * MAILER_LOCALES and MAILER_DEFAULT_LOCALE, and the operator's wording per offered locale. The default locale's
 * entry also holds the un-suffixed settings (MAILER_SUBJECTS_*, MAILER_TEMPLATES_*, SMS_TEMPLATE: a Go template in
 * which `{{ .Code }}` is the code), under its own suffixed ones; what an entry leaves out is the built-in text of
 * that locale (auth/messages/BuiltInTexts), whose English is GoTrue's defaults.
 */
export interface MessageLocalization {
  readonly offer: LocaleOffer
  readonly byLocale: ReadonlyMap<MessageLocale, LocaleSettings>
}

/** One Web3 chain's switch, and how far a signed message's Issued At may be from now (GoTrue's default, 10 minutes). */
export interface Web3ChainConfig {
  readonly enabled: boolean
  readonly maximumValidityDuration: Duration.Duration
}

/** SAML_*: the SAML 2.0 service provider (POST /sso, /sso/saml/*), read by config/SamlSettings.ts. */
export interface SamlConfig {
  readonly enabled: boolean
  /** SAML_PRIVATE_KEY: the SP's RSA key (signs AuthnRequests; its certificate is in the SP metadata). */
  readonly privateKey: Option.Option<Redacted.Redacted<KeyObject>>
  /** SAML_PRIVATE_KEY_NEXT: its certificate is published beside the current one, and it decrypts too. */
  readonly nextPrivateKey: Option.Option<Redacted.Redacted<KeyObject>>
  /** SAML_ALLOW_ENCRYPTED_ASSERTIONS: the keys are offered for encryption, and encrypted assertions decrypted. */
  readonly allowEncryptedAssertions: boolean
  readonly relayStateValidity: Duration.Duration
  /** SAML_EXTERNAL_URL, else API_EXTERNAL_URL: where the SP's metadata and ACS URLs are built. */
  readonly externalUrl: string
  /** SAML_RATE_LIMIT_ASSERTION: POST /sso/saml/acs per client, per 5 minutes in bursts of 30. */
  readonly rateLimitAssertion: number
}

/** The GoTrue-compatible auth server's settings (spec/auth-server.md §1.1), parsed and validated once at start-up. */
export interface AuthConfig {
  readonly siteUrl: string
  readonly uriAllowList: ReadonlyArray<string>
  readonly disableSignup: boolean
  readonly externalEmailEnabled: boolean
  /** EXTERNAL_EMAIL_MAGIC_LINK_ENABLED, GoTrue's switch for passwordless email sign-in (/otp with an email, /magiclink). */
  readonly externalEmailMagicLinkEnabled: boolean
  readonly externalPhoneEnabled: boolean
  readonly anonymousUsersEnabled: boolean
  /** EXTERNAL_WEB3_ETHEREUM_* / EXTERNAL_WEB3_SOLANA_*: Web3 sign-in (POST /token?grant_type=web3), per chain. */
  readonly web3: {
    readonly ethereum: Web3ChainConfig
    readonly solana: Web3ChainConfig
  }
  readonly saml: SamlConfig
  readonly rateLimit: {
    /** RATE_LIMIT_EMAIL_SENT / RATE_LIMIT_SMS_SENT: instance-wide quotas, counted in fixed windows of `per`. */
    readonly emailSent: { readonly events: number; readonly per: Duration.Duration }
    readonly smsSent: { readonly events: number; readonly per: Duration.Duration }
    /**
     * RATE_LIMIT_EMAIL_PER_RECIPIENT / RATE_LIMIT_SMS_PER_RECIPIENT (Gatehouse's own): at most `events` messages to
     * one address or phone number in any `per` (a sliding window); None, the default, is no limit.
     */
    readonly emailPerRecipient: Option.Option<{ readonly events: number; readonly per: Duration.Duration }>
    readonly smsPerRecipient: Option.Option<{ readonly events: number; readonly per: Duration.Duration }>
    /**
     * Per client, keyed on RATE_LIMIT_HEADER (the platform's api.clientHeader; off without it), each route its own
     * bucket as in GoTrue.
     * RATE_LIMIT_OTP: POST /magiclink, /otp, /recover, /resend, /signup with an email or phone, and PUT /user.
     */
    readonly otp: RequestLimit
    /** RATE_LIMIT_ANONYMOUS_USERS: POST /signup with neither email nor phone. */
    readonly anonymousUsers: RequestLimit
    /** RATE_LIMIT_TOKEN_REFRESH: POST /token, every grant. */
    readonly tokenRefresh: RequestLimit
    /** RATE_LIMIT_VERIFY: GET and POST /verify, one bucket. */
    readonly verify: RequestLimit
    /**
     * RATE_LIMIT_VERIFY_GUESSES (Gatehouse's own): the verifications a client may try that can be guessed, typed
     * codes and GoTrue-form link hashes, counted always: by RATE_LIMIT_HEADER's client, else the connection's peer.
     */
    readonly verifyGuesses: RequestLimit
    /** RATE_LIMIT_WEB3: POST /token?grant_type=web3, counted before its answer, in place of RATE_LIMIT_TOKEN. */
    readonly web3: RequestLimit
    /** RATE_LIMIT_SSO: POST /sso. */
    readonly sso: RequestLimit
    /** RATE_LIMIT_PASSKEY: POST /passkeys/authentication/options, the one passkey route anyone may call. */
    readonly passkey: RequestLimit
    /** RATE_LIMIT_OAUTH_DYNAMIC_CLIENT_REGISTER: POST /oauth/clients/register (10 per 5 minutes by default). */
    readonly oauthClientRegister: RequestLimit
    /**
     * RATE_LIMIT_OAUTH_AUTHORIZE (Gatehouse's own; GoTrue has none): GET /oauth/authorize, each of which stores a
     * request (60 per 5 minutes in bursts of 60 by default).
     */
    readonly oauthAuthorize: RequestLimit
    /**
     * MFA_RATE_LIMIT_CHALLENGE_AND_VERIFY: per minute in bursts of 30, POST /factors/{id}/challenge and
     * /factors/{id}/verify each their own bucket, as GoTrue.
     */
    readonly mfaChallengeAndVerify: RequestLimit
  }
  readonly password: {
    readonly minLength: number
    readonly requiredCharacters: ReadonlyArray<string>
  }
  /** The deletion of rows nothing needs any more (platform/process/Housekeeping, plan §3). */
  readonly housekeeping: {
    /** HOUSEKEEPING_ENABLED (Gatehouse's own, default true): off on an instance, it sweeps nothing. */
    readonly enabled: boolean
    /**
     * AUDIT_LOG_RETENTION (Gatehouse's own): audit entries older than this are deleted. None (unset or 0, the
     * default) keeps every entry, as GoTrue does.
     */
    readonly auditLogRetention: Option.Option<Duration.Duration>
  }
  readonly security: {
    readonly refreshTokenRotationEnabled: boolean
    readonly refreshTokenReuseInterval: Duration.Duration
    readonly updatePasswordRequireReauthentication: boolean
    /**
     * A user's own password change (PUT /user) ends their other sessions, as GoTrue always does; off, they go on (an
     * admin's password change still ends them all).
     */
    readonly passwordChangeEndsOtherSessions: boolean
    /** GET /user/identities/authorize and DELETE /user/identities/{id}: a signed-in user links or unlinks providers. */
    readonly manualLinkingEnabled: boolean
    /**
     * Gatehouse's own: the OAuth state is bound to the browser that started the flow by a short-lived cookie, and a
     * /callback without it is refused. Off: GoTrue's behaviour, for deployments whose /authorize and /callback are
     * served on different hosts.
     */
    readonly oauthBrowserBindingEnabled: boolean
    readonly captcha: {
      readonly enabled: boolean
      readonly provider: "hcaptcha" | "turnstile"
      readonly secret: Option.Option<Redacted.Redacted<string>>
      readonly timeout: Duration.Duration
      /** Gatehouse's own: where tokens are verified instead of the provider's siteverify URL (tests, egress proxies). */
      readonly verifyUrl: Option.Option<string>
    }
  }
  readonly jwt: {
    readonly secret: Redacted.Redacted<string>
    /** GoTrue's JWT_KEYS: a JSON array of private JWKs, for asymmetric signing. */
    readonly keys: ReadonlyArray<Record<string, unknown>>
    readonly keyId: Option.Option<string>
    readonly issuer: Option.Option<string>
    readonly validMethods: ReadonlyArray<string>
    readonly exp: number
    readonly aud: string
    readonly adminGroupName: string
    readonly defaultGroupName: string
    readonly adminRoles: ReadonlyArray<string>
  }
  /** MFA_*: second factors (GoTrue's names and defaults). */
  readonly mfa: {
    readonly totp: FactorSwitches
    readonly phone: FactorSwitches & {
      /** MFA_PHONE_OTP_LENGTH: 6 to 10 digits; anything else is 6, as GoTrue. */
      readonly otpLength: number
      /** MFA_PHONE_MAX_FREQUENCY: the least time between two texted challenges of one factor. */
      readonly maxFrequency: Duration.Duration
      /** MFA_PHONE_TEMPLATE: a Go template in which `{{ .Code }}` is the code. */
      readonly template: string
    }
    readonly webauthn: FactorSwitches
    /** MFA_CHALLENGE_EXPIRY_DURATION: never under 300 s (GoTrue raises it). */
    readonly challengeExpiry: Duration.Duration
    /** MFA_FACTOR_EXPIRY_DURATION: how long an unverified, never-challenged factor lives (at least 300 s). */
    readonly factorExpiry: Duration.Duration
    readonly maxEnrolledFactors: number
    readonly maxVerifiedFactors: number
    /**
     * Gatehouse's own (MFA_MAX_VERIFY_FAILURES, MFA_VERIFY_FAILURE_WINDOW): failed verifications one factor may take
     * within the window before it is refused until the window ends, counted in the database for every instance.
     */
    readonly maxVerifyFailures: number
    readonly verifyFailureWindow: Duration.Duration
  }
  /** PASSKEY_*: first-factor WebAuthn sign-in. */
  readonly passkey: {
    readonly enabled: boolean
    readonly maxPerUser: number
    /** WEBAUTHN_CHALLENGE_EXPIRY_DURATION: the life of a passkey ceremony's challenge. */
    readonly challengeExpiry: Duration.Duration
  }
  /** OAUTH_SERVER_*: Gatehouse as an OAuth 2.1 / OpenID Connect identity provider (off by default). */
  readonly oauthServer: {
    readonly enabled: boolean
    readonly allowDynamicRegistration: boolean
    /** Where /oauth/authorize sends the browser (SITE_URL + this path + ?authorization_id=…): the app's consent page. */
    readonly authorizationPath: string
    /** How long an authorization request (and so its code) lives. */
    readonly authorizationTtl: Duration.Duration
    /** The scope of an authorization request that names none. */
    readonly defaultScope: string
  }
  /** ADMIN_CONSOLE_* (Gatehouse's own): the operator's HTML console at /_admin (src/auth/admin/console). */
  readonly adminConsole: {
    /** ADMIN_CONSOLE_ENABLED (default false): off, /_admin is the auth API's 404 like any unknown path. */
    readonly enabled: boolean
    /** ADMIN_CONSOLE_SESSION_LIFETIME (default 1h): how long a console sign-in lasts (never past the key's own expiry). */
    readonly sessionLifetime: Duration.Duration
  }
  /** WEBAUTHN_RP_*: the relying party every WebAuthn ceremony (passkeys and WebAuthn factors) names. */
  readonly webauthn: {
    readonly rpId: string
    readonly rpDisplayName: string
    readonly rpOrigins: ReadonlyArray<string>
  }
  /** EXTERNAL_<NAME>_*, for each provider the parse was given (ParseOptions.oauthProviders), by name. */
  readonly external: Readonly<Partial<Record<string, OAuthProviderConfig>>>
  readonly smtp: {
    /** None in the embedded default: mail is kept in the outbox. */
    readonly host: Option.Option<string>
    readonly port: number
    readonly user: Option.Option<string>
    readonly pass: Option.Option<Redacted.Redacted<string>>
    readonly adminEmail: string
    readonly senderName: string
    readonly maxFrequency: Duration.Duration
    /**
     * The least time between two recovery or magic-link mails to one address, whatever SMTP_MAX_FREQUENCY says:
     * GoTrue's fixed minute (RECOVERY_MIN_INTERVAL), except in the embedded default's development frequency, where
     * it would make a person trying things wait a minute between a magic link and a password reset.
     */
    readonly linkMinInterval: Duration.Duration
  }
  readonly mailer: {
    readonly autoconfirm: boolean
    /**
     * MAILER_SECURE_EMAIL_CHANGE_ENABLED: an email change is confirmed from the current address as well as the new
     * one (GoTrue's default); off, the new address's confirmation alone applies it.
     */
    readonly secureEmailChangeEnabled: boolean
    readonly otpExp: Duration.Duration
    readonly otpLength: number
    readonly urlPaths: Omit<EmailTemplateSet<string>, "magicLink" | "reauthentication">
    /**
     * MAILER_LINK_CONFIRM_PAGE: GET /verify answers a page whose button spends the link (POST /verify/confirm),
     * so a mail scanner that follows links spends nothing. Off: GET /verify spends the link, as in GoTrue.
     */
    readonly linkConfirmPage: boolean
    readonly localization: MessageLocalization
  }
  readonly sms: {
    readonly autoconfirm: boolean
    readonly maxFrequency: Duration.Duration
    readonly otpExp: Duration.Duration
    readonly otpLength: number
    readonly provider: Option.Option<SmsProviderName>
    /** SMS_TEST_OTP: fixed codes for these numbers (E.164 digits, no "+"); no text is sent to them. */
    readonly testOtp: ReadonlyMap<string, string>
    readonly twilio: {
      readonly accountSid: Option.Option<string>
      readonly authToken: Option.Option<Redacted.Redacted<string>>
      readonly messageServiceSid: Option.Option<string>
      /** SMS_TWILIO_CONTENT_SID: the approved WhatsApp template a WhatsApp code is sent as (optional). */
      readonly contentSid: Option.Option<string>
    }
    readonly messagebird: {
      readonly accessKey: Option.Option<Redacted.Redacted<string>>
      readonly originator: Option.Option<string>
    }
    readonly textlocal: {
      readonly apiKey: Option.Option<Redacted.Redacted<string>>
      readonly sender: Option.Option<string>
    }
    readonly vonage: {
      readonly apiKey: Option.Option<string>
      readonly apiSecret: Option.Option<Redacted.Redacted<string>>
      readonly from: Option.Option<string>
    }
  }
}

/** MFA_<TYPE>_ENROLL_ENABLED and MFA_<TYPE>_VERIFY_ENABLED. */
export interface FactorSwitches {
  readonly enroll: boolean
  readonly verify: boolean
}

/** GoTrue's SMS_TEMPLATE default: the body of every texted code (sign-up, sign-in, phone change, reauthentication). */
export const DEFAULT_SMS_TEMPLATE = "Your code is {{ .Code }}"

export const AuthConfig = Context.GenericTag<AuthConfig>("config/AuthConfig")

/**
 * The auth server's settings out of a whole configuration, and nothing else: what the AuthConfig tag holds, so no
 * auth service reaches the platform's or IAM's settings through it. Listing every field makes a new one a compile
 * error here.
 */
export const authConfigOf = (config: AuthConfig): AuthConfig => ({
  siteUrl: config.siteUrl,
  uriAllowList: config.uriAllowList,
  disableSignup: config.disableSignup,
  externalEmailEnabled: config.externalEmailEnabled,
  externalEmailMagicLinkEnabled: config.externalEmailMagicLinkEnabled,
  externalPhoneEnabled: config.externalPhoneEnabled,
  anonymousUsersEnabled: config.anonymousUsersEnabled,
  web3: config.web3,
  saml: config.saml,
  rateLimit: config.rateLimit,
  password: config.password,
  housekeeping: config.housekeeping,
  security: config.security,
  jwt: config.jwt,
  mfa: config.mfa,
  passkey: config.passkey,
  adminConsole: config.adminConsole,
  oauthServer: config.oauthServer,
  webauthn: config.webauthn,
  external: config.external,
  smtp: config.smtp,
  mailer: config.mailer,
  sms: config.sms
})

type SmsCredentials = Pick<AuthConfig["sms"], SmsProviderName>

/** The settings a provider needs that are unset (their canonical names without prefix). */
export const smsCredentialsMissing = (provider: SmsProviderName, sms: SmsCredentials): ReadonlyArray<string> => {
  const required: Record<SmsProviderName, ReadonlyArray<readonly [string, Option.Option<unknown>]>> = {
    twilio: [["SMS_TWILIO_ACCOUNT_SID", sms.twilio.accountSid], ["SMS_TWILIO_AUTH_TOKEN", sms.twilio.authToken],
      ["SMS_TWILIO_MESSAGE_SERVICE_SID", sms.twilio.messageServiceSid]],
    messagebird: [["SMS_MESSAGEBIRD_ACCESS_KEY", sms.messagebird.accessKey], ["SMS_MESSAGEBIRD_ORIGINATOR", sms.messagebird.originator]],
    textlocal: [["SMS_TEXTLOCAL_API_KEY", sms.textlocal.apiKey], ["SMS_TEXTLOCAL_SENDER", sms.textlocal.sender]],
    vonage: [["SMS_VONAGE_API_KEY", sms.vonage.apiKey], ["SMS_VONAGE_API_SECRET", sms.vonage.apiSecret], ["SMS_VONAGE_FROM", sms.vonage.from]]
  }
  return required[provider].filter(([, value]) => Option.isNone(value)).map(([key]) => key)
}

/** Whether the configured provider has every credential it needs (else sends fail, as in GoTrue). */
export const smsProviderReady = (sms: AuthConfig["sms"]): boolean =>
  Option.isSome(sms.provider) && smsCredentialsMissing(sms.provider.value, sms).length === 0

