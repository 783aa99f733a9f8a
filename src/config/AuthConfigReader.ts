import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { parseDurationSetting } from "../domain/GoDuration.js"
import { allowListEntryProblem } from "../domain/RedirectAllowList.js"
import { asMessageLocale, ENGLISH_ONLY, MESSAGE_LOCALES, type MessageLocale } from "../domain/MessageLocale.js"
import {
  type AuthConfig,
  DEFAULT_SMS_TEMPLATE,
  type EmailTemplateSet,
  type LocaleSettings,
  type MessageLocalization,
  type OAuthProviderConfig,
  type OAuthProviderSpec,
  RECOVERY_MIN_INTERVAL,
  SEND_FREQUENCY_DEFAULTS,
  smsCredentialsMissing,
  type SmsProviderName
} from "./AuthConfig.js"
import { developmentUrl, type PlatformConfig } from "./PlatformConfig.js"
import { readSamlSettings } from "./SamlSettings.js"
import type { ReadContext } from "./ReadContext.js"
import type { RequestLimit } from "./RequestLimit.js"
import { parseRequiredCharacters } from "./RequiredCharacters.js"
import { isAbsoluteUrl, type SettingsReader } from "./SettingsReader.js"

export interface AuthReadOptions {
  /** Embedded mode only: the JWT secret kept in the data directory. */
  readonly embeddedJwtSecret?: Redacted.Redacted<string>
  /** The providers whose EXTERNAL_<NAME>_* variables are read; none unless given. */
  readonly oauthProviders?: ReadonlyArray<OAuthProviderSpec>
}

export const MIN_JWT_SECRET_BYTES = 32

const SMS_PROVIDERS: ReadonlyArray<SmsProviderName> = ["twilio", "messagebird", "textlocal", "vonage"]
const JWT_ALGORITHMS = ["HS256", "RS256", "RS512", "ES256", "ES512", "EdDSA"]

const seconds = (duration: Duration.Duration): string => `${Duration.toSeconds(duration)}s`

/** Below this a retention would delete the entries of an incident before anyone looked: refused at start-up. */
export const MIN_AUDIT_LOG_RETENTION = Duration.hours(1)

/** AUDIT_LOG_RETENTION: unset or 0 keeps every entry; anything else must be at least MIN_AUDIT_LOG_RETENTION. */
const readAuditLogRetention = (r: SettingsReader): Option.Option<Duration.Duration> => {
  const retention = r.duration("AUDIT_LOG_RETENTION", Duration.zero)
  if (Duration.toMillis(retention) === 0) return Option.none()
  if (Duration.lessThan(retention, MIN_AUDIT_LOG_RETENTION)) {
    r.fail(r.spelledAs("AUDIT_LOG_RETENTION"), "must be 0 (keep every entry) or at least 1h")
    return Option.none()
  }
  return Option.some(retention)
}

/**
 * Reads the auth server's settings through `r`, which collects their issues with the platform's and IAM's, in the
 * order they were always read in. The platform's settings are read first: the development URLs are built on its
 * port, and its client header decides whether the per-client limits hold.
 */
export const readAuthConfig = (
  r: SettingsReader,
  ctx: ReadContext,
  platform: PlatformConfig,
  options: AuthReadOptions = {}
): AuthConfig => {
  const siteUrl = ctx.devDefault("SITE_URL", developmentUrl(platform.api.port))
  if (siteUrl !== "" && !isAbsoluteUrl(siteUrl)) r.fail(r.spelledAs("SITE_URL"), "must be an absolute http(s) URL")
  // A mistyped entry would silently never match; refuse it at start-up instead.
  const uriAllowList = r.list("URI_ALLOW_LIST", [])
  for (const entry of uriAllowList) {
    const problem = allowListEntryProblem(entry)
    if (problem !== undefined) r.fail(r.spelledAs("URI_ALLOW_LIST"), `entry ${JSON.stringify(entry)} ${problem}`)
  }
  const signing = readJwtSigning(r, ctx, options.embeddedJwtSecret)
  const smtpServer = readSmtpServer(r, ctx)
  const emailFrequency = sendFrequency(r, ctx, "SMTP_MAX_FREQUENCY", "email")
  const smsFrequency = sendFrequency(r, ctx, "SMS_MAX_FREQUENCY", "sms")
  if (emailFrequency.developed) {
    ctx.defaulted.push(`${r.canonical("SMTP_MAX_FREQUENCY")}=${seconds(emailFrequency.value)} (production: ${
      seconds(SEND_FREQUENCY_DEFAULTS.production.email)
    }, and recovery and magic-link mails at least ${seconds(RECOVERY_MIN_INTERVAL)} apart)`)
  }
  if (smsFrequency.developed) {
    ctx.defaulted.push(`${r.canonical("SMS_MAX_FREQUENCY")}=${seconds(smsFrequency.value)} (production: ${seconds(SEND_FREQUENCY_DEFAULTS.production.sms)})`)
  }

  const rotationEnabled = r.boolean("SECURITY_REFRESH_TOKEN_ROTATION_ENABLED", true)
  const captchaEnabled = r.boolean("SECURITY_CAPTCHA_ENABLED", false)
  const captchaSecret = r.secret("SECURITY_CAPTCHA_SECRET")
  if (captchaEnabled && Option.isNone(captchaSecret)) {
    r.fail(r.canonical("SECURITY_CAPTCHA_SECRET"), "is required when SECURITY_CAPTCHA_ENABLED is true")
  }

  const phone = readPhone(r, ctx)
  const external = readExternalProviders(r, options.oauthProviders ?? [])
  const requiredCharacters = parseRequiredCharacters(Option.getOrElse(r.string("PASSWORD_REQUIRED_CHARACTERS"), () => ""))
  const rateLimit = readRateLimits(r)
  // GoTrue is silent about it; one line at start-up saves an operator from believing the limits hold.
  if (ctx.production && Option.isNone(platform.api.clientHeader)) {
    ctx.warnings.push(`${r.canonical("RATE_LIMIT_HEADER")} is not set: per-IP request rate limits (RATE_LIMIT_OTP, RATE_LIMIT_TOKEN_REFRESH, RATE_LIMIT_VERIFY, RATE_LIMIT_ANONYMOUS_USERS) are off`)
  }

  return {
    siteUrl,
    uriAllowList,
    disableSignup: r.boolean("DISABLE_SIGNUP", false),
    externalEmailEnabled: r.boolean("EXTERNAL_EMAIL_ENABLED", true),
    externalEmailMagicLinkEnabled: r.boolean("EXTERNAL_EMAIL_MAGIC_LINK_ENABLED", true),
    externalPhoneEnabled: phone.enabled,
    anonymousUsersEnabled: r.boolean("EXTERNAL_ANONYMOUS_USERS_ENABLED", false),
    web3: {
      ethereum: {
        enabled: r.boolean("EXTERNAL_WEB3_ETHEREUM_ENABLED", false),
        maximumValidityDuration: r.duration("EXTERNAL_WEB3_ETHEREUM_MAXIMUM_VALIDITY_DURATION", Duration.minutes(10))
      },
      solana: {
        enabled: r.boolean("EXTERNAL_WEB3_SOLANA_ENABLED", false),
        maximumValidityDuration: r.duration("EXTERNAL_WEB3_SOLANA_MAXIMUM_VALIDITY_DURATION", Duration.minutes(10))
      }
    },
    saml: readSamlSettings(r, platform.api.externalUrl),
    rateLimit,
    password: {
      minLength: r.integer("PASSWORD_MIN_LENGTH", 6, { min: 1, max: 72 }),
      requiredCharacters
    },
    housekeeping: {
      enabled: r.boolean("HOUSEKEEPING_ENABLED", true),
      auditLogRetention: readAuditLogRetention(r)
    },
    security: {
      refreshTokenRotationEnabled: rotationEnabled,
      refreshTokenReuseInterval: r.duration("SECURITY_REFRESH_TOKEN_REUSE_INTERVAL", Duration.seconds(10)),
      updatePasswordRequireReauthentication: r.boolean("SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION", false),
      passwordChangeEndsOtherSessions: r.boolean("SECURITY_PASSWORD_CHANGE_ENDS_OTHER_SESSIONS", true),
      manualLinkingEnabled: r.boolean("SECURITY_MANUAL_LINKING_ENABLED", false),
      oauthBrowserBindingEnabled: r.boolean("SECURITY_OAUTH_BROWSER_BINDING_ENABLED", true),
      captcha: {
        enabled: captchaEnabled,
        provider: r.oneOf("SECURITY_CAPTCHA_PROVIDER", ["hcaptcha", "turnstile"], "hcaptcha"),
        secret: captchaSecret,
        timeout: r.duration("SECURITY_CAPTCHA_TIMEOUT", Duration.seconds(10)),
        verifyUrl: r.url("SECURITY_CAPTCHA_VERIFY_URL")
      }
    },
    jwt: {
      secret: signing.secret,
      keys: signing.keys,
      keyId: r.string("JWT_KEY_ID"),
      issuer: r.string("JWT_ISSUER"),
      validMethods: signing.validMethods,
      exp: r.integer("JWT_EXP", 3600, { min: 1, max: 604_800 }),
      aud: Option.getOrElse(r.string("JWT_AUD"), () => "authenticated"),
      adminGroupName: Option.getOrElse(r.string("JWT_ADMIN_GROUP_NAME"), () => "admin"),
      defaultGroupName: Option.getOrElse(r.string("JWT_DEFAULT_GROUP_NAME"), () => "authenticated"),
      adminRoles: r.list("JWT_ADMIN_ROLES", ["service_role", "supabase_admin"])
    },
    ...readWebAuthn(r, ctx, siteUrl),
    adminConsole: readAdminConsole(r),
    oauthServer: readOAuthServer(r, ctx, signing.keys),
    external,
    smtp: {
      host: smtpServer.host,
      port: smtpServer.port,
      user: r.string("SMTP_USER"),
      pass: r.secret("SMTP_PASS"),
      adminEmail: smtpServer.adminEmail,
      senderName: Option.getOrElse(r.string("SMTP_SENDER_NAME"), () => smtpServer.adminEmail),
      maxFrequency: emailFrequency.value,
      linkMinInterval: emailFrequency.developed ? Duration.zero : RECOVERY_MIN_INTERVAL
    },
    mailer: readMailer(r),
    sms: {
      autoconfirm: r.boolean("SMS_AUTOCONFIRM", false),
      maxFrequency: smsFrequency.value,
      otpExp: r.duration("SMS_OTP_EXP", Duration.seconds(60)),
      otpLength: r.integer("SMS_OTP_LENGTH", 6, { min: 6, max: 10 }),
      provider: phone.provider,
      testOtp: phone.testOtp,
      ...phone.credentials
    }
  }
}

/** ADMIN_CONSOLE_*: the operator's console at /_admin (Gatehouse's own; GoTrue has none). */
const readAdminConsole = (r: SettingsReader): AuthConfig["adminConsole"] => {
  const lifetime = r.duration("ADMIN_CONSOLE_SESSION_LIFETIME", Duration.hours(1))
  // A second would sign the operator out before the first page; a day is longer than anyone should stay signed in.
  if (Duration.lessThan(lifetime, Duration.minutes(1)) || Duration.greaterThan(lifetime, Duration.hours(24))) {
    r.fail(r.spelledAs("ADMIN_CONSOLE_SESSION_LIFETIME"), "must be between 1m and 24h")
  }
  return {
    enabled: r.boolean("ADMIN_CONSOLE_ENABLED", false),
    sessionLifetime: lifetime
  }
}

/** OAUTH_SERVER_*, GoTrue's names and defaults; an enabled server without a consent page warns at start. */
const readOAuthServer = (
  r: SettingsReader,
  ctx: ReadContext,
  keys: ReadonlyArray<Record<string, unknown>>
): AuthConfig["oauthServer"] => {
  const enabled = r.boolean("OAUTH_SERVER_ENABLED", false)
  const authorizationPath = Option.getOrElse(r.string("OAUTH_SERVER_AUTHORIZATION_PATH"), () => "")
  if (enabled && authorizationPath === "") {
    ctx.warnings.push(`${r.canonical("OAUTH_SERVER_AUTHORIZATION_PATH")} is not set: /oauth/authorize answers server_error until it is`)
  }
  const asymmetricSigner = keys.some((key) => key["kty"] !== "oct" && Array.isArray(key["key_ops"]) && key["key_ops"].includes("sign"))
  if (enabled && !asymmetricSigner) {
    ctx.warnings.push(`${r.canonical("OAUTH_SERVER_ENABLED")} is on with no asymmetric signing key in ${r.canonical("JWT_KEYS")}: ` +
      "an authorization asking for the openid scope cannot get its ID token (500) until one is added")
  }
  const authorizationTtl = r.duration("OAUTH_SERVER_AUTHORIZATION_TTL", Duration.minutes(10))
  // A request must outlive its own creation (the table checks expires_at > created_at): below 1s every /authorize failed.
  if (Duration.lessThan(authorizationTtl, Duration.seconds(1))) r.fail(r.spelledAs("OAUTH_SERVER_AUTHORIZATION_TTL"), "must be at least 1s")
  return {
    enabled,
    allowDynamicRegistration: r.boolean("OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION", false),
    authorizationPath,
    authorizationTtl,
    defaultScope: Option.getOrElse(r.string("OAUTH_SERVER_DEFAULT_SCOPE"), () => "email")
  }
}

// GoTrue raises shorter MFA lifetimes to five minutes rather than refusing them.
const MFA_MIN_EXPIRY = Duration.seconds(300)
const atLeast = (duration: Duration.Duration, floor: Duration.Duration) => Duration.max(duration, floor)

/**
 * MFA, passkeys and the WebAuthn relying party. GoTrue starts without WEBAUTHN_RP_ID and answers 500 at the first
 * ceremony; here a production start with a WebAuthn feature on and no relying party is refused, and the embedded
 * default takes SITE_URL's host and origin (listed in the banner).
 */
const readWebAuthn = (r: SettingsReader, ctx: ReadContext, siteUrl: string): Pick<AuthConfig, "mfa" | "passkey" | "webauthn"> => {
  const phoneLength = r.integer("MFA_PHONE_OTP_LENGTH", 6)
  const mfa: AuthConfig["mfa"] = {
    totp: { enroll: r.boolean("MFA_TOTP_ENROLL_ENABLED", true), verify: r.boolean("MFA_TOTP_VERIFY_ENABLED", true) },
    phone: {
      enroll: r.boolean("MFA_PHONE_ENROLL_ENABLED", false),
      verify: r.boolean("MFA_PHONE_VERIFY_ENABLED", false),
      otpLength: phoneLength >= 6 && phoneLength <= 10 ? phoneLength : 6,
      maxFrequency: r.duration("MFA_PHONE_MAX_FREQUENCY", Duration.minutes(1)),
      template: Option.getOrElse(r.string("MFA_PHONE_TEMPLATE"), () => DEFAULT_SMS_TEMPLATE)
    },
    webauthn: {
      enroll: r.boolean("MFA_WEB_AUTHN_ENROLL_ENABLED", false),
      verify: r.boolean("MFA_WEB_AUTHN_VERIFY_ENABLED", false)
    },
    challengeExpiry: atLeast(r.duration("MFA_CHALLENGE_EXPIRY_DURATION", MFA_MIN_EXPIRY), MFA_MIN_EXPIRY),
    factorExpiry: atLeast(r.duration("MFA_FACTOR_EXPIRY_DURATION", MFA_MIN_EXPIRY), MFA_MIN_EXPIRY),
    maxEnrolledFactors: r.integer("MFA_MAX_ENROLLED_FACTORS", 10, { min: 0 }),
    maxVerifiedFactors: r.integer("MFA_MAX_VERIFIED_FACTORS", 10, { min: 0 }),
    maxVerifyFailures: r.integer("MFA_MAX_VERIFY_FAILURES", 5, { min: 1 }),
    verifyFailureWindow: r.duration("MFA_VERIFY_FAILURE_WINDOW", Duration.minutes(5))
  }
  const passkey: AuthConfig["passkey"] = {
    enabled: r.boolean("PASSKEY_ENABLED", false),
    maxPerUser: r.integer("PASSKEY_MAX_PASSKEYS_PER_USER", 10, { min: 1 }),
    challengeExpiry: r.duration("WEBAUTHN_CHALLENGE_EXPIRY_DURATION", Duration.minutes(5))
  }
  const site = siteUrl === "" ? undefined : URL.parse(siteUrl) ?? undefined
  const rpId = r.string("WEBAUTHN_RP_ID")
  const rpOrigins = r.list("WEBAUTHN_RP_ORIGINS", [])
  for (const origin of rpOrigins) {
    const parsed = URL.parse(origin)
    if (parsed === null || parsed.origin !== origin.replace(/\/$/, "")) {
      r.fail(r.spelledAs("WEBAUTHN_RP_ORIGINS"), `entry ${JSON.stringify(origin)} must be an origin such as https://app.example.com`)
    }
  }
  const needed = passkey.enabled || mfa.webauthn.enroll || mfa.webauthn.verify
  const webauthn: AuthConfig["webauthn"] = {
    rpId: Option.getOrElse(rpId, () => site?.hostname ?? ""),
    rpDisplayName: Option.getOrElse(r.string("WEBAUTHN_RP_DISPLAY_NAME"), () => site?.hostname ?? "Gatehouse"),
    rpOrigins: rpOrigins.length > 0 ? rpOrigins.map((o) => o.replace(/\/$/, "")) : site === undefined ? [] : [site.origin]
  }
  if (needed && ctx.production) {
    if (Option.isNone(rpId)) r.fail(r.canonical("WEBAUTHN_RP_ID"), "is required when passkeys or WebAuthn factors are enabled")
    if (rpOrigins.length === 0) r.fail(r.canonical("WEBAUTHN_RP_ORIGINS"), "is required when passkeys or WebAuthn factors are enabled")
  } else if (needed) {
    if (Option.isNone(rpId)) ctx.defaulted.push(`${r.canonical("WEBAUTHN_RP_ID")}=${webauthn.rpId}`)
    if (rpOrigins.length === 0) ctx.defaulted.push(`${r.canonical("WEBAUTHN_RP_ORIGINS")}=${webauthn.rpOrigins.join(",")}`)
  }
  return { mfa, passkey, webauthn }
}

/** The JWT secret (generated in the embedded default), JWT_KEYS and JWT_VALID_METHODS, with their rules. */
const readJwtSigning = (r: SettingsReader, ctx: ReadContext, embeddedJwtSecret: Redacted.Redacted<string> | undefined) => {
  const secret = ctx.production || embeddedJwtSecret === undefined
    ? Redacted.make(r.requiredString("JWT_SECRET"))
    : Option.getOrElse(r.secret("JWT_SECRET"), () => {
      ctx.defaulted.push(`${r.canonical("JWT_SECRET")}=<generated, kept in the data directory>`)
      return embeddedJwtSecret
    })
  // HS256 with a short secret can be brute-forced offline from any one token; 32 bytes is HMAC-SHA256's key size.
  const secretBytes = Buffer.byteLength(Redacted.value(secret), "utf8")
  if (ctx.production && secretBytes > 0 && secretBytes < MIN_JWT_SECRET_BYTES) {
    r.fail(r.spelledAs("JWT_SECRET"), `must be at least ${MIN_JWT_SECRET_BYTES} bytes long`)
  }
  const keys = r.parse("JWT_KEYS", undefined, [] as ReadonlyArray<Record<string, unknown>>,
    "must be a JSON array of JWK objects", parseJwkArray)
  const validMethods = r.list("JWT_VALID_METHODS", [])
  for (const method of validMethods) {
    if (!JWT_ALGORITHMS.includes(method)) {
      r.fail(r.spelledAs("JWT_VALID_METHODS"), `must list only: ${JWT_ALGORITHMS.join(", ")}`)
      break
    }
  }
  return { secret, keys, validMethods }
}

/** Where mail goes: required in production; the embedded default keeps mail in the outbox without SMTP_HOST. */
const readSmtpServer = (r: SettingsReader, ctx: ReadContext) => {
  const host = r.string("SMTP_HOST")
  const port = r.integer("SMTP_PORT", 587, { min: 1, max: 65535 })
  const adminEmail = ctx.production
    ? r.requiredString("SMTP_ADMIN_EMAIL")
    : Option.getOrElse(r.string("SMTP_ADMIN_EMAIL"), () => "admin@localhost")
  if (ctx.production) {
    if (Option.isNone(host)) r.fail(r.canonical("SMTP_HOST"), "is required")
    if (Option.isNone(r.lookup("SMTP_PORT"))) r.fail(r.canonical("SMTP_PORT"), "is required")
  } else if (Option.isNone(host)) {
    ctx.defaulted.push("mail: kept in the outbox (no SMTP_HOST)")
  }
  if (adminEmail !== "" && !adminEmail.includes("@")) r.fail(r.spelledAs("SMTP_ADMIN_EMAIL"), "must be an email address")
  return { host, port, adminEmail }
}

// An explicit setting wins in either mode, and then recovery and magic-link mails keep GoTrue's floor too.
const sendFrequency = (
  r: SettingsReader,
  ctx: ReadContext,
  key: string,
  channel: "email" | "sms"
): { readonly value: Duration.Duration; readonly developed: boolean } => {
  const fallback = SEND_FREQUENCY_DEFAULTS.production[channel]
  if (ctx.production || Option.isSome(r.lookup(key))) return { value: r.duration(key, fallback), developed: false }
  return { value: SEND_FREQUENCY_DEFAULTS.development[channel], developed: true }
}

/** Phone sign-in, the SMS provider and its credentials, and SMS_TEST_OTP. */
const readPhone = (r: SettingsReader, ctx: ReadContext) => {
  const enabled = r.boolean("EXTERNAL_PHONE_ENABLED", false)
  const provider = Option.map(r.lookup("SMS_PROVIDER"), () => r.oneOf("SMS_PROVIDER", SMS_PROVIDERS, "twilio"))
  const credentials: Pick<AuthConfig["sms"], SmsProviderName> = {
    twilio: {
      accountSid: r.string("SMS_TWILIO_ACCOUNT_SID"),
      authToken: r.secret("SMS_TWILIO_AUTH_TOKEN"),
      messageServiceSid: r.string("SMS_TWILIO_MESSAGE_SERVICE_SID"),
      contentSid: r.string("SMS_TWILIO_CONTENT_SID")
    },
    messagebird: { accessKey: r.secret("SMS_MESSAGEBIRD_ACCESS_KEY"), originator: r.string("SMS_MESSAGEBIRD_ORIGINATOR") },
    textlocal: { apiKey: r.secret("SMS_TEXTLOCAL_API_KEY"), sender: r.string("SMS_TEXTLOCAL_SENDER") },
    vonage: { apiKey: r.string("SMS_VONAGE_API_KEY"), apiSecret: r.secret("SMS_VONAGE_API_SECRET"), from: r.string("SMS_VONAGE_FROM") }
  }
  // GoTrue starts with phone sign-in on and no usable provider and fails only when a text must be sent; so do
  // we, with one warning naming what is missing. Without a provider, texts fail in production and are kept in the
  // outbox in the embedded default.
  if (enabled && Option.isNone(provider)) {
    if (ctx.production) {
      ctx.warnings.push(`${r.canonical("EXTERNAL_PHONE_ENABLED")} is true but ${r.canonical("SMS_PROVIDER")} is not set: texts cannot be sent (SMS_TEST_OTP numbers still work)`)
    } else {
      ctx.defaulted.push("texts: kept in the outbox (no SMS_PROVIDER)")
    }
  }
  if (enabled && Option.isSome(provider)) {
    const missing = smsCredentialsMissing(provider.value, credentials)
    if (missing.length > 0) {
      ctx.warnings.push(`${r.canonical("SMS_PROVIDER")} is ${provider.value} but ${
        missing.map((key) => r.canonical(key)).join(", ")
      } ${missing.length === 1 ? "is" : "are"} not set: texts cannot be sent (SMS_TEST_OTP numbers still work)`)
    }
  }
  const testOtp = r.parse("SMS_TEST_OTP", undefined, new Map<string, string>() as ReadonlyMap<string, string>,
    "must be comma-separated phone:code pairs, e.g. 15551234567:123456", parseTestOtp)
  return { enabled, provider, credentials, testOtp }
}

/** EXTERNAL_<NAME>_* for each provider the composition handed in. */
const readExternalProviders = (
  r: SettingsReader,
  oauthProviders: ReadonlyArray<OAuthProviderSpec>
): Record<string, OAuthProviderConfig> => {
  const external: Record<string, OAuthProviderConfig> = Object.fromEntries(oauthProviders.map(({ name }) => {
    const key = `EXTERNAL_${name.toUpperCase()}`
    const enabled = r.boolean(`${key}_ENABLED`, false)
    const clientId = r.string(`${key}_CLIENT_ID`)
    const secret = r.secret(`${key}_SECRET`)
    const redirectUri = r.url(`${key}_REDIRECT_URI`)
    if (enabled) {
      if (Option.isNone(clientId)) r.fail(r.canonical(`${key}_CLIENT_ID`), `is required when ${key}_ENABLED is true`)
      if (Option.isNone(secret)) r.fail(r.canonical(`${key}_SECRET`), `is required when ${key}_ENABLED is true`)
      if (Option.isNone(r.lookup(`${key}_REDIRECT_URI`))) {
        r.fail(r.canonical(`${key}_REDIRECT_URI`), `is required when ${key}_ENABLED is true`)
      }
    }
    const provider: OAuthProviderConfig = {
      enabled,
      clientId: Option.getOrElse(clientId, () => ""),
      secret,
      redirectUri: Option.getOrElse(redirectUri, () => ""),
      // A provider's default hosts, when the variable is unset, are its descriptor's (src/auth/oauth).
      url: r.url(`${key}_URL`)
    }
    return [name, provider]
  }))
  for (const { name, urlRequired } of oauthProviders) {
    const key = `EXTERNAL_${name.toUpperCase()}`
    if (urlRequired && external[name]?.enabled === true && Option.isNone(external[name].url)) {
      r.fail(r.canonical(`${key}_URL`), `is required when ${key}_ENABLED is true`)
    }
  }
  return external
}

/** The instance-wide send quotas and the per-client request limits. */
const readRateLimits = (r: SettingsReader): AuthConfig["rateLimit"] => {
  const emailSent = r.parse("RATE_LIMIT_EMAIL_SENT", undefined, { events: 30, per: Duration.hours(1) },
    "must be a number of emails per hour, or N/duration such as 10/15m", parseRate)
  const smsSent = r.parse("RATE_LIMIT_SMS_SENT", undefined, { events: 30, per: Duration.hours(1) },
    "must be a number of texts per hour, or N/duration such as 10/15m", parseRate)
  // GoTrue's apilimiter: most limiters refill their number per 5 minutes in bursts of 30; anonymous sign-ins per
  // hour, in bursts of the number itself (cut to a whole number, as Go's int() does).
  const perFiveMinutes = (events: number): RequestLimit => ({ events, per: Duration.minutes(5), burst: 30 })
  // Unset: no per-recipient limit, so an app that never sets them sees nothing new.
  const perRecipient = (key: string, what: string) =>
    r.parse(key, undefined, Option.none<{ events: number; per: Duration.Duration }>(),
      `must be a whole number of ${what} per hour from 1 to ${MAX_PER_RECIPIENT}, or N/duration such as 3/15m (unset: no limit)`,
      (raw) => Option.map(Option.filter(parseRate(raw), perRecipientRule), Option.some))
  const anonymousUsers = r.parse("RATE_LIMIT_ANONYMOUS_USERS", undefined, 30, REQUESTS_RULE, parseRequests)
  return {
    emailSent,
    smsSent,
    emailPerRecipient: perRecipient("RATE_LIMIT_EMAIL_PER_RECIPIENT", "emails"),
    smsPerRecipient: perRecipient("RATE_LIMIT_SMS_PER_RECIPIENT", "texts"),
    otp: perFiveMinutes(r.parse("RATE_LIMIT_OTP", undefined, 30, REQUESTS_RULE, parseRequests)),
    anonymousUsers: { events: anonymousUsers, per: Duration.hours(1), burst: Math.floor(anonymousUsers) },
    tokenRefresh: perFiveMinutes(r.parse("RATE_LIMIT_TOKEN_REFRESH", undefined, 150, REQUESTS_RULE, parseRequests)),
    verify: perFiveMinutes(r.parse("RATE_LIMIT_VERIFY", undefined, 30, REQUESTS_RULE, parseRequests)),
    verifyGuesses: perFiveMinutes(r.parse("RATE_LIMIT_VERIFY_GUESSES", undefined, 30, REQUESTS_RULE, parseRequests)),
    sso: perFiveMinutes(r.parse("RATE_LIMIT_SSO", undefined, 30, REQUESTS_RULE, parseRequests)),
    web3: perFiveMinutes(r.parse("RATE_LIMIT_WEB3", undefined, 30, REQUESTS_RULE, parseRequests)),
    passkey: perFiveMinutes(r.parse("RATE_LIMIT_PASSKEY", undefined, 30, REQUESTS_RULE, parseRequests)),
    oauthClientRegister: perFiveMinutes(r.parse("RATE_LIMIT_OAUTH_DYNAMIC_CLIENT_REGISTER", undefined, 10, REQUESTS_RULE, parseRequests)),
    // Gatehouse's own: every /oauth/authorize stores a row, so a client may not store them without end.
    oauthAuthorize: { events: r.parse("RATE_LIMIT_OAUTH_AUTHORIZE", undefined, 60, REQUESTS_RULE, parseRequests), per: Duration.minutes(5), burst: 60 },
    mfaChallengeAndVerify: {
      events: r.parse("MFA_RATE_LIMIT_CHALLENGE_AND_VERIFY", undefined, 15, REQUESTS_RULE, parseRequests),
      per: Duration.minutes(1),
      burst: 30
    }
  }
}

/** Each mail's suffix in its settings (MAILER_SUBJECTS_<KIND>, MAILER_TEMPLATES_<KIND>). */
const MAIL_KIND_KEYS: EmailTemplateSet<string> = {
  invite: "INVITE",
  confirmation: "CONFIRMATION",
  recovery: "RECOVERY",
  magicLink: "MAGIC_LINK",
  emailChange: "EMAIL_CHANGE",
  reauthentication: "REAUTHENTICATION"
}

const MAIL_KINDS = Object.keys(MAIL_KIND_KEYS) as ReadonlyArray<keyof EmailTemplateSet<unknown>>

const mapKinds = <A>(f: (kind: keyof EmailTemplateSet<unknown>, key: string) => A): EmailTemplateSet<A> =>
  Object.fromEntries(MAIL_KINDS.map((kind) => [kind, f(kind, MAIL_KIND_KEYS[kind])])) as unknown as EmailTemplateSet<A>

/** The set entries of a set of optional settings. */
const present = (set: EmailTemplateSet<Option.Option<string>>): Partial<EmailTemplateSet<string>> =>
  Object.fromEntries(MAIL_KINDS.flatMap((kind) => Option.match(set[kind], { onNone: () => [], onSome: (value) => [[kind, value]] })))

const parseLocales = (raw: string): Option.Option<ReadonlyArray<MessageLocale>> => {
  const names = raw.split(",").map((name) => name.trim()).filter((name) => name !== "")
  const locales = names.map(asMessageLocale)
  return names.length > 0 && locales.every((locale) => locale !== undefined)
    ? Option.some([...new Set(locales as ReadonlyArray<MessageLocale>)])
    : Option.none()
}

/**
 * MAILER_LOCALES, MAILER_DEFAULT_LOCALE and the per-locale wording. Only offered locales' suffixed settings are
 * read (any other is reported unread at start-up, as a misspelt setting is). The un-suffixed ones are the default
 * locale's, under its suffixed ones, so that with the defaults (English only) nothing changes.
 */
const readLocalization = (
  r: SettingsReader,
  unsuffixed: { readonly subjects: EmailTemplateSet<Option.Option<string>>; readonly templates: EmailTemplateSet<Option.Option<string>>; readonly sms: Option.Option<string> }
): MessageLocalization => {
  const names = MESSAGE_LOCALES.join(", ")
  const offered = r.parse("MAILER_LOCALES", undefined, ENGLISH_ONLY.offered, `must be a comma-separated list of: ${names}`, parseLocales)
  const fallback = r.parse("MAILER_DEFAULT_LOCALE", undefined, ENGLISH_ONLY.fallback, `must be one of: ${names}`, (raw) =>
    Option.fromNullable(asMessageLocale(raw)))
  if (!offered.includes(fallback)) r.fail(r.spelledAs("MAILER_DEFAULT_LOCALE"), `must be one of ${r.canonical("MAILER_LOCALES")}`)
  const byLocale = new Map(offered.map((locale): [MessageLocale, LocaleSettings] => {
    const suffix = locale.toUpperCase()
    const isDefault = locale === fallback
    const own = <A>(read: Option.Option<A>, fallbackRead: Option.Option<A>) => isDefault ? Option.orElse(read, () => fallbackRead) : read
    return [locale, {
      subjects: present(mapKinds((kind, key) => own(r.string(`MAILER_SUBJECTS_${key}_${suffix}`), unsuffixed.subjects[kind]))),
      templates: present(mapKinds((kind, key) => own(r.url(`MAILER_TEMPLATES_${key}_${suffix}`), unsuffixed.templates[kind]))),
      smsTemplate: own(r.string(`SMS_TEMPLATE_${suffix}`), unsuffixed.sms)
    }]
  }))
  return { offer: { offered, fallback }, byLocale }
}

const readMailer = (r: SettingsReader): AuthConfig["mailer"] => {
  const subjects = mapKinds((_, key) => r.string(`MAILER_SUBJECTS_${key}`))
  const templates = mapKinds((_, key) => r.url(`MAILER_TEMPLATES_${key}`))
  return {
    autoconfirm: r.boolean("MAILER_AUTOCONFIRM", false),
    secureEmailChangeEnabled: r.boolean("MAILER_SECURE_EMAIL_CHANGE_ENABLED", true),
    otpExp: r.duration("MAILER_OTP_EXP", Duration.seconds(86_400)),
    otpLength: r.integer("MAILER_OTP_LENGTH", 6, { min: 6, max: 10 }),
    urlPaths: {
      invite: Option.getOrElse(r.string("MAILER_URLPATHS_INVITE"), () => "/verify"),
      confirmation: Option.getOrElse(r.string("MAILER_URLPATHS_CONFIRMATION"), () => "/verify"),
      recovery: Option.getOrElse(r.string("MAILER_URLPATHS_RECOVERY"), () => "/verify"),
      emailChange: Option.getOrElse(r.string("MAILER_URLPATHS_EMAIL_CHANGE"), () => "/verify")
    },
    linkConfirmPage: r.boolean("MAILER_LINK_CONFIRM_PAGE", false),
    localization: readLocalization(r, { subjects, templates, sms: r.string("SMS_TEMPLATE") })
  }
}

const parseJwkArray = (raw: string): Option.Option<ReadonlyArray<Record<string, unknown>>> => {
  try {
    const parsed: unknown = JSON.parse(raw)
    return Array.isArray(parsed) && parsed.every((k) => typeof k === "object" && k !== null && !Array.isArray(k))
      ? Option.some(parsed as ReadonlyArray<Record<string, unknown>>)
      : Option.none()
  } catch {
    return Option.none()
  }
}

/** SMS_TEST_OTP: `phone:code` pairs, comma-separated; phones are stored as GoTrue stores them (digits, no "+"). */
const parseTestOtp = (text: string): Option.Option<ReadonlyMap<string, string>> => {
  const pairs = new Map<string, string>()
  for (const entry of text.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
    const match = /^\+?([1-9][0-9]{1,14}):([0-9]{4,10})$/.exec(entry.replace(/\s/g, ""))
    if (match === null) return Option.none()
    pairs.set(match[1]!, match[2]!)
  }
  return Option.some(pairs)
}

const REQUESTS_RULE = "must be a number of requests, not negative (decimals allowed, e.g. 30 or 2.5)"

// GoTrue reads these as float64: a decimal number, with an exponent if need be. Negative rates and Inf are refused.
const parseRequests = (raw: string): Option.Option<number> =>
  Option.filter(
    Option.liftPredicate(raw, (text) => /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/.test(text)).pipe(Option.map(Number)),
    Number.isFinite
  )

/**
 * The most messages a per-recipient limit may allow in its window: every send time of a window is kept (see
 * RecipientSendWindow), and a limit that large is no limit on one recipient anyway.
 */
const MAX_PER_RECIPIENT = 1000

// A count of messages, not a rate: 0 would refuse every message (leave the setting unset for no limit).
const perRecipientRule = (rate: { events: number }): boolean =>
  Number.isInteger(rate.events) && rate.events >= 1 && rate.events <= MAX_PER_RECIPIENT

// GoTrue's Rate setting: "30" (per hour) or "10/15m".
const parseRate = (raw: string): Option.Option<{ events: number; per: Duration.Duration }> => {
  const [count, period, ...extra] = raw.split("/")
  if (extra.length > 0 || count === undefined || !/^\d+(\.\d+)?$/.test(count.trim())) return Option.none()
  const events = Number(count)
  if (period === undefined) return Option.some({ events, per: Duration.hours(1) })
  return Option.flatMap(
    Option.liftPredicate(period.trim(), (p) => p !== ""),
    // A window of no length has no start or end to count in.
    (p) => Option.map(Option.filter(parseDurationSetting(p), Duration.greaterThan(Duration.zero)), (per) => ({ events, per }))
  )
}
