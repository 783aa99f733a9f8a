import { availableParallelism } from "node:os"
import { Context, Duration, Either, Option, Redacted } from "effect"
import { corsOriginProblem } from "../domain/CorsOrigins.js"
import { allowListEntryProblem } from "../domain/RedirectAllowList.js"
import { defaultPoolSize } from "./DefaultPoolSize.js"
import { parseDurationSetting } from "../domain/GoDuration.js"
import { parseKeyValueList } from "./KeyValueList.js"
import { parseRequiredCharacters } from "./RequiredCharacters.js"
import { type ConfigIssue, isAbsoluteUrl, SettingsReader } from "./SettingsReader.js"

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

const seconds = (duration: Duration.Duration): string => `${Duration.toSeconds(duration)}s`

/** OTEL_EXPORTER_OTLP_PROTOCOL's values. */
export type OtlpProtocol = "grpc" | "http/protobuf" | "http/json"

export type LogLevelName = "panic" | "fatal" | "error" | "warn" | "info" | "debug" | "trace"
export type SmsProviderName = "twilio" | "messagebird" | "textlocal" | "vonage"
export type DatabaseMode = "postgres" | "embedded"

/** A verification-only PASETO key: a previous signing key kept until its tokens have expired. */
export interface IamPublicKey {
  readonly kid: string
  /** PASERK k4.public. */
  readonly paserk: string
}

/** The IAM service (spec/auth-microservice.md); see docs/iam.md. */
export interface IamConfig {
  /** Default: on in the embedded default; in production, on when a signing key is configured. */
  readonly enabled: boolean
  readonly grpcHost: string
  readonly grpcPort: number
  /** Ed25519 signing key, PASERK k4.secret or PKCS#8 PEM. None in the embedded default: kept in the data directory. */
  readonly signingKey: Option.Option<Redacted.Redacted<string>>
  /** Key id written to the token footer; None derives one from the public key. */
  readonly keyId: Option.Option<string>
  readonly previousPublicKeys: ReadonlyArray<IamPublicKey>
  readonly issuer: string
  readonly accessTokenTtl: Duration.Duration
  readonly refreshTokenTtl: Duration.Duration
  /**
   * How long after a refresh token was exchanged presenting it again still gets the same child instead of
   * counting as reuse (AUTH_IAM_REFRESH_TOKEN_REUSE_INTERVAL; zero: never), as the auth server's
   * SECURITY_REFRESH_TOKEN_REUSE_INTERVAL.
   */
  readonly refreshTokenReuseInterval: Duration.Duration
  /** Largest request message accepted on the gRPC port; larger ones get RESOURCE_EXHAUSTED. */
  readonly maxMessageBytes: number
  /** The role the policy grants every action on every resource. */
  readonly adminRole: string
  /** How often the revocation list and the policy version are re-read, whatever LISTEN/NOTIFY delivers. */
  readonly cacheRefreshInterval: Duration.Duration
  /** Login throttling (docs/iam.md): per account, a backoff after failures in a row; per client, a bucket of failures. */
  readonly loginThrottle: IamLoginThrottle
  /** Created (or given the admin role) at start-up when all three are set. */
  readonly bootstrapAdmin: {
    readonly username: Option.Option<string>
    readonly email: Option.Option<string>
    readonly password: Option.Option<Redacted.Redacted<string>>
  }
}

/** How IAM Login refuses guessing: settings of docs/iam.md's "Login throttling". */
export interface IamLoginThrottle {
  /** Failures in a row an account may have before its next attempt must wait (AUTH_IAM_LOGIN_BACKOFF_AFTER). */
  readonly backoffAfter: number
  /** The first wait; each further failure doubles it (AUTH_IAM_LOGIN_BACKOFF). */
  readonly backoff: Duration.Duration
  /** The longest wait (AUTH_IAM_LOGIN_BACKOFF_MAX). */
  readonly backoffMax: Duration.Duration
  /** An account's failures are forgotten once it has had no attempt for this long after its wait (AUTH_IAM_LOGIN_FORGET_AFTER). */
  readonly forgetAfter: Duration.Duration
  /** Failures one client may make: a bucket of `burst`, refilled at `events` per `per` (AUTH_IAM_LOGIN_CLIENT_FAILURES per AUTH_IAM_LOGIN_CLIENT_PERIOD). */
  readonly clientFailures: RequestLimit
}

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

/**
 * A per-client request limit as GoTrue's tollbooth limiters count it: a bucket of `burst` requests, refilled at
 * `events` per `per`. `events` may be fractional (GoTrue reads a float).
 */
export interface RequestLimit {
  readonly events: number
  readonly per: Duration.Duration
  readonly burst: number
}

export interface EmailTemplateSet<A> {
  readonly invite: A
  readonly confirmation: A
  readonly recovery: A
  readonly magicLink: A
  readonly emailChange: A
}

/** Every setting of spec/auth-server.md §1.1, parsed and validated once at start-up. */
export interface AppConfig {
  readonly mode: DatabaseMode
  readonly dataDir: string
  /** Processes serving the ports (AUTH_WORKERS): one per core in production by default; always 1 embedded. */
  readonly workers: number
  readonly siteUrl: string
  readonly uriAllowList: ReadonlyArray<string>
  readonly operatorToken: Option.Option<Redacted.Redacted<string>>
  /**
   * GoTrue's multi-instance mode, entered with the `multi` command (not a variable, as in GoTrue): requests must
   * be signed by the operator with OPERATOR_TOKEN, which the mode requires.
   */
  readonly multiInstance: boolean
  readonly disableSignup: boolean
  readonly externalEmailEnabled: boolean
  /** EXTERNAL_EMAIL_MAGIC_LINK_ENABLED, GoTrue's switch for passwordless email sign-in (/otp with an email, /magiclink). */
  readonly externalEmailMagicLinkEnabled: boolean
  readonly externalPhoneEnabled: boolean
  readonly anonymousUsersEnabled: boolean
  readonly rateLimit: {
    readonly header: Option.Option<string>
    /** RATE_LIMIT_EMAIL_SENT / RATE_LIMIT_SMS_SENT: instance-wide quotas, counted in fixed windows of `per`. */
    readonly emailSent: { readonly events: number; readonly per: Duration.Duration }
    readonly smsSent: { readonly events: number; readonly per: Duration.Duration }
    /**
     * Per client, keyed on RATE_LIMIT_HEADER (off without it), each route its own bucket as in GoTrue.
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
    /** RATE_LIMIT_WEB3: POST /token?grant_type=web3, counted before its answer (Web3 sign-in is off until it lands). */
    readonly web3: RequestLimit
    /** RATE_LIMIT_SSO, RATE_LIMIT_PASSKEY: read and checked as GoTrue does; their routes answer "disabled" or do not exist yet. */
    readonly sso: RequestLimit
    readonly passkey: RequestLimit
  }
  readonly password: {
    readonly minLength: number
    readonly requiredCharacters: ReadonlyArray<string>
  }
  readonly security: {
    readonly refreshTokenRotationEnabled: boolean
    readonly refreshTokenReuseInterval: Duration.Duration
    readonly updatePasswordRequireReauthentication: boolean
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
  readonly api: {
    readonly host: string
    readonly port: number
    readonly endpoint: Option.Option<string>
    readonly externalUrl: string
    readonly requestIdHeader: Option.Option<string>
    readonly corsAllowedHeaders: ReadonlyArray<string>
    /** Gatehouse's own: the origins CORS answers (with credentials); empty, every origin, as in GoTrue. */
    readonly corsAllowedOrigins: ReadonlyArray<string>
  }
  readonly db: {
    readonly driver: "postgres"
    readonly url: Option.Option<Redacted.Redacted<string>>
    /** Each worker's pool; 0 means no limit, as in GoTrue (only when set so: the default is finite). */
    readonly maxPoolSize: number
    readonly namespace: string
  }
  readonly log: {
    readonly level: LogLevelName
    readonly file: Option.Option<string>
  }
  readonly observability: {
    readonly tracingEnabled: boolean
    readonly tracingExporter: "opentelemetry"
    readonly metricsEnabled: boolean
    readonly metricsExporter: "opentelemetry" | "prometheus"
    readonly prometheusHost: string
    readonly prometheusPort: number
    readonly debug: boolean
    /** OTEL_RESOURCE_ATTRIBUTES, parsed. */
    readonly resourceAttributes: Readonly<Record<string, string>>
    /** OTEL_SERVICE_NAME; default gatehouse. */
    readonly serviceName: string
    readonly otlp: {
      /** OTEL_EXPORTER_OTLP_PROTOCOL: how traces and pushed metrics travel; default http/protobuf, as the SDK's. */
      readonly protocol: OtlpProtocol
      /** Where traces go: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces. */
      readonly tracesEndpoint: Option.Option<string>
      /** The same for pushed metrics (/v1/metrics). */
      readonly metricsEndpoint: Option.Option<string>
      /** OTEL_EXPORTER_OTLP_HEADERS, parsed: sent with every export (a collector's API key, say). */
      readonly headers: Readonly<Record<string, Redacted.Redacted<string>>>
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
    readonly urlPaths: Omit<EmailTemplateSet<string>, "magicLink">
    readonly subjects: EmailTemplateSet<string>
    readonly templates: EmailTemplateSet<Option.Option<string>>
  }
  readonly iam: IamConfig
  readonly sms: {
    readonly autoconfirm: boolean
    readonly maxFrequency: Duration.Duration
    readonly otpExp: Duration.Duration
    readonly otpLength: number
    readonly provider: Option.Option<SmsProviderName>
    /** SMS_TEMPLATE: the texted body, a Go template in which `{{ .Code }}` is the code. */
    readonly template: string
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

/** GoTrue's SMS_TEMPLATE default: the body of every texted code (sign-up, sign-in, phone change, reauthentication). */
export const DEFAULT_SMS_TEMPLATE = "Your code is {{ .Code }}"

export const AppConfig = Context.GenericTag<AppConfig>("config/AppConfig")

/** What start-up filled in because the operator left it unset: shown in the banner, never secret values. */
export type Defaulted = ReadonlyArray<string>

/**
 * Settings that start but will fail later, as GoTrue's do (phone sign-in with no SMS provider, a provider with
 * empty credentials): logged once at start-up, never secret values.
 */
export type ConfigWarnings = ReadonlyArray<string>

/** What parseAppConfig returns on success. */
export interface ParsedConfig {
  readonly config: AppConfig
  readonly defaulted: Defaulted
  readonly warnings: ConfigWarnings
}

export interface ParseOptions {
  /** Embedded mode only: the JWT secret kept in the data directory. */
  readonly embeddedJwtSecret?: Redacted.Redacted<string>
  /** The default of AUTH_WORKERS in production; os.availableParallelism() unless given. */
  readonly cores?: number
  /** The providers whose EXTERNAL_<NAME>_* variables are read; none unless given. */
  readonly oauthProviders?: ReadonlyArray<OAuthProviderSpec>
}

export const DEFAULT_PORT = 8081
export const DEFAULT_DATA_DIR = "./.gatehouse"

const NAMESPACE = /^[a-z_][a-z0-9_]{0,40}$/
const SMS_PROVIDERS: ReadonlyArray<SmsProviderName> = ["twilio", "messagebird", "textlocal", "vonage"]
const LOG_LEVELS: ReadonlyArray<LogLevelName | "warning"> = ["panic", "fatal", "error", "warn", "warning", "info", "debug", "trace"]
const JWT_ALGORITHMS = ["HS256", "RS256", "RS512", "ES256", "ES512", "EdDSA"]
export const MIN_JWT_SECRET_BYTES = 32

type SmsCredentials = Pick<AppConfig["sms"], SmsProviderName>

/** The settings a provider needs that are unset (their canonical names without prefix). */
const smsCredentialsMissing = (provider: SmsProviderName, sms: SmsCredentials): ReadonlyArray<string> => {
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
export const smsProviderReady = (sms: AppConfig["sms"]): boolean =>
  Option.isSome(sms.provider) && smsCredentialsMissing(sms.provider.value, sms).length === 0

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

/** The data directory, read before anything else because the embedded JWT secret lives there. */
export const readDataDir = (env: Readonly<Record<string, string | undefined>>): string =>
  Option.getOrElse(new SettingsReader(env).string("DATA_DIR"), () => DEFAULT_DATA_DIR)

/** Production when a database URL is configured; otherwise the embedded PGlite default. */
export const readMode = (env: Readonly<Record<string, string | undefined>>): DatabaseMode =>
  Option.isSome(new SettingsReader(env).lookup("DB_DATABASE_URL", { unprefixed: ["DATABASE_URL"] })) ? "postgres" : "embedded"

/**
 * Parses the whole configuration. Production (a DATABASE_URL is set) enforces every setting the spec marks
 * required; the embedded default fills development values instead and reports each one in `defaulted`.
 */
export const parseAppConfig = (
  env: Readonly<Record<string, string | undefined>>,
  options: ParseOptions = {}
): Either.Either<ParsedConfig, ReadonlyArray<ConfigIssue>> => {
  const r = new SettingsReader(env)
  const mode = readMode(env)
  const production = mode === "postgres"
  const defaulted: Array<string> = []
  const warnings: Array<string> = []
  const devDefault = (key: string, value: string, names?: { unprefixed?: ReadonlyArray<string> }): string => {
    if (production) return r.requiredString(key, names)
    const found = r.string(key, names)
    if (Option.isSome(found)) return found.value
    defaulted.push(`${names?.unprefixed?.[0] ?? r.canonical(key)}=${value}`)
    return value
  }
  // Issues name the spelling the operator actually set (GOTRUE_SITE_URL, AUTH_DB_DATABASE_URL, …).
  const spelledAs = (key: string, names?: { unprefixed?: ReadonlyArray<string> }): string =>
    Option.match(r.lookup(key, names), { onNone: () => r.canonical(key), onSome: (found) => found.variable })

  const port = r.integer("API_PORT", DEFAULT_PORT, { min: 0, max: 65535 }, { unprefixed: ["PORT"] })
  const devUrl = `http://localhost:${port === 0 ? DEFAULT_PORT : port}`
  const siteUrl = devDefault("SITE_URL", devUrl)
  if (siteUrl !== "" && !isAbsoluteUrl(siteUrl)) r.fail(spelledAs("SITE_URL"), "must be an absolute http(s) URL")
  const externalUrl = devDefault("API_EXTERNAL_URL", devUrl, { unprefixed: ["API_EXTERNAL_URL"] })
  if (externalUrl !== "" && !isAbsoluteUrl(externalUrl)) {
    r.fail(spelledAs("API_EXTERNAL_URL", { unprefixed: ["API_EXTERNAL_URL"] }), "must be an absolute http(s) URL")
  }
  // A mistyped entry would silently never match; refuse it at start-up instead.
  const uriAllowList = r.list("URI_ALLOW_LIST", [])
  for (const entry of uriAllowList) {
    const problem = allowListEntryProblem(entry)
    if (problem !== undefined) r.fail(spelledAs("URI_ALLOW_LIST"), `entry ${JSON.stringify(entry)} ${problem}`)
  }

  const corsAllowedOrigins = r.list("CORS_ALLOWED_ORIGINS", [])
  for (const entry of corsAllowedOrigins) {
    const problem = corsOriginProblem(entry)
    if (problem !== undefined) r.fail(spelledAs("CORS_ALLOWED_ORIGINS"), `entry ${JSON.stringify(entry)} ${problem}`)
  }

  const workers = readWorkers(r, production, options.cores ?? availableParallelism(), warnings)
  const storage = readStorage(r, production, workers)

  const jwtSecret = production || options.embeddedJwtSecret === undefined
    ? Redacted.make(r.requiredString("JWT_SECRET"))
    : Option.getOrElse(r.secret("JWT_SECRET"), () => {
      defaulted.push(`${r.canonical("JWT_SECRET")}=<generated, kept in the data directory>`)
      return options.embeddedJwtSecret!
    })
  // HS256 with a short secret can be brute-forced offline from any one token; 32 bytes is HMAC-SHA256's key size.
  const jwtSecretBytes = Buffer.byteLength(Redacted.value(jwtSecret), "utf8")
  if (production && jwtSecretBytes > 0 && jwtSecretBytes < MIN_JWT_SECRET_BYTES) {
    r.fail(spelledAs("JWT_SECRET"), `must be at least ${MIN_JWT_SECRET_BYTES} bytes long`)
  }
  const jwtKeys = r.parse("JWT_KEYS", undefined, [] as ReadonlyArray<Record<string, unknown>>,
    "must be a JSON array of JWK objects", parseJwkArray)
  const validMethods = r.list("JWT_VALID_METHODS", [])
  for (const method of validMethods) {
    if (!JWT_ALGORITHMS.includes(method)) {
      r.fail(spelledAs("JWT_VALID_METHODS"), `must list only: ${JWT_ALGORITHMS.join(", ")}`)
      break
    }
  }

  const smtpHost = r.string("SMTP_HOST")
  const smtpPort = r.integer("SMTP_PORT", 587, { min: 1, max: 65535 })
  const adminEmail = production
    ? r.requiredString("SMTP_ADMIN_EMAIL")
    : Option.getOrElse(r.string("SMTP_ADMIN_EMAIL"), () => "admin@localhost")
  if (production) {
    if (Option.isNone(smtpHost)) r.fail(r.canonical("SMTP_HOST"), "is required")
    if (Option.isNone(r.lookup("SMTP_PORT"))) r.fail(r.canonical("SMTP_PORT"), "is required")
  } else if (Option.isNone(smtpHost)) {
    defaulted.push("mail: kept in the outbox (no SMTP_HOST)")
  }
  if (adminEmail !== "" && !adminEmail.includes("@")) r.fail(spelledAs("SMTP_ADMIN_EMAIL"), "must be an email address")

  // An explicit setting wins in either mode, and then recovery and magic-link mails keep GoTrue's floor too.
  const sendFrequency = (key: string, channel: "email" | "sms"): { readonly value: Duration.Duration; readonly developed: boolean } => {
    const fallback = SEND_FREQUENCY_DEFAULTS.production[channel]
    if (production || Option.isSome(r.lookup(key))) return { value: r.duration(key, fallback), developed: false }
    return { value: SEND_FREQUENCY_DEFAULTS.development[channel], developed: true }
  }
  const emailFrequency = sendFrequency("SMTP_MAX_FREQUENCY", "email")
  const smsFrequency = sendFrequency("SMS_MAX_FREQUENCY", "sms")
  if (emailFrequency.developed) {
    defaulted.push(`${r.canonical("SMTP_MAX_FREQUENCY")}=${seconds(emailFrequency.value)} (production: ${
      seconds(SEND_FREQUENCY_DEFAULTS.production.email)
    }, and recovery and magic-link mails at least ${seconds(RECOVERY_MIN_INTERVAL)} apart)`)
  }
  if (smsFrequency.developed) {
    defaulted.push(`${r.canonical("SMS_MAX_FREQUENCY")}=${seconds(smsFrequency.value)} (production: ${seconds(SEND_FREQUENCY_DEFAULTS.production.sms)})`)
  }

  const rotationEnabled = r.boolean("SECURITY_REFRESH_TOKEN_ROTATION_ENABLED", true)
  const captchaEnabled = r.boolean("SECURITY_CAPTCHA_ENABLED", false)
  const captchaSecret = r.secret("SECURITY_CAPTCHA_SECRET")
  if (captchaEnabled && Option.isNone(captchaSecret)) {
    r.fail(r.canonical("SECURITY_CAPTCHA_SECRET"), "is required when SECURITY_CAPTCHA_ENABLED is true")
  }

  const externalPhoneEnabled = r.boolean("EXTERNAL_PHONE_ENABLED", false)
  const smsProvider = Option.map(r.lookup("SMS_PROVIDER"), () => r.oneOf("SMS_PROVIDER", SMS_PROVIDERS, "twilio"))
  const sms = {
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
  if (externalPhoneEnabled && Option.isNone(smsProvider)) {
    if (production) {
      warnings.push(`${r.canonical("EXTERNAL_PHONE_ENABLED")} is true but ${r.canonical("SMS_PROVIDER")} is not set: texts cannot be sent (SMS_TEST_OTP numbers still work)`)
    } else {
      defaulted.push("texts: kept in the outbox (no SMS_PROVIDER)")
    }
  }
  if (externalPhoneEnabled && Option.isSome(smsProvider)) {
    const missing = smsCredentialsMissing(smsProvider.value, sms)
    if (missing.length > 0) {
      warnings.push(`${r.canonical("SMS_PROVIDER")} is ${smsProvider.value} but ${
        missing.map((key) => r.canonical(key)).join(", ")
      } ${missing.length === 1 ? "is" : "are"} not set: texts cannot be sent (SMS_TEST_OTP numbers still work)`)
    }
  }
  const testOtp = r.parse("SMS_TEST_OTP", undefined, new Map<string, string>() as ReadonlyMap<string, string>,
    "must be comma-separated phone:code pairs, e.g. 15551234567:123456", parseTestOtp)

  const oauthProviders = options.oauthProviders ?? []
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

  const requiredCharacters = parseRequiredCharacters(Option.getOrElse(r.string("PASSWORD_REQUIRED_CHARACTERS"), () => ""))
  const emailSent = r.parse("RATE_LIMIT_EMAIL_SENT", undefined, { events: 30, per: Duration.hours(1) },
    "must be a number of emails per hour, or N/duration such as 10/15m", parseRate)
  const smsSent = r.parse("RATE_LIMIT_SMS_SENT", undefined, { events: 30, per: Duration.hours(1) },
    "must be a number of texts per hour, or N/duration such as 10/15m", parseRate)
  // GoTrue's apilimiter: most limiters refill their number per 5 minutes in bursts of 30; anonymous sign-ins per
  // hour, in bursts of the number itself (cut to a whole number, as Go's int() does).
  const perFiveMinutes = (events: number): RequestLimit => ({ events, per: Duration.minutes(5), burst: 30 })
  const anonymousUsers = r.parse("RATE_LIMIT_ANONYMOUS_USERS", undefined, 30, REQUESTS_RULE, parseRequests)
  const requestLimits = {
    otp: perFiveMinutes(r.parse("RATE_LIMIT_OTP", undefined, 30, REQUESTS_RULE, parseRequests)),
    anonymousUsers: { events: anonymousUsers, per: Duration.hours(1), burst: Math.floor(anonymousUsers) },
    tokenRefresh: perFiveMinutes(r.parse("RATE_LIMIT_TOKEN_REFRESH", undefined, 150, REQUESTS_RULE, parseRequests)),
    verify: perFiveMinutes(r.parse("RATE_LIMIT_VERIFY", undefined, 30, REQUESTS_RULE, parseRequests)),
    verifyGuesses: perFiveMinutes(r.parse("RATE_LIMIT_VERIFY_GUESSES", undefined, 30, REQUESTS_RULE, parseRequests)),
    sso: perFiveMinutes(r.parse("RATE_LIMIT_SSO", undefined, 30, REQUESTS_RULE, parseRequests)),
    web3: perFiveMinutes(r.parse("RATE_LIMIT_WEB3", undefined, 30, REQUESTS_RULE, parseRequests)),
    passkey: perFiveMinutes(r.parse("RATE_LIMIT_PASSKEY", undefined, 30, REQUESTS_RULE, parseRequests))
  }
  const rateLimitHeader = r.string("RATE_LIMIT_HEADER")
  // GoTrue is silent about it; one line at start-up saves an operator from believing the limits hold.
  if (production && Option.isNone(rateLimitHeader)) {
    warnings.push(`${r.canonical("RATE_LIMIT_HEADER")} is not set: per-IP request rate limits (RATE_LIMIT_OTP, RATE_LIMIT_TOKEN_REFRESH, RATE_LIMIT_VERIFY, RATE_LIMIT_ANONYMOUS_USERS) are off`)
  }

  const iam = parseIamConfig(r, production, warnings)

  const config: AppConfig = {
    mode,
    dataDir: readDataDir(env),
    workers,
    siteUrl,
    uriAllowList,
    operatorToken: r.secret("OPERATOR_TOKEN"),
    multiInstance: false,
    disableSignup: r.boolean("DISABLE_SIGNUP", false),
    externalEmailEnabled: r.boolean("EXTERNAL_EMAIL_ENABLED", true),
    externalEmailMagicLinkEnabled: r.boolean("EXTERNAL_EMAIL_MAGIC_LINK_ENABLED", true),
    externalPhoneEnabled,
    anonymousUsersEnabled: r.boolean("EXTERNAL_ANONYMOUS_USERS_ENABLED", false),
    rateLimit: { header: rateLimitHeader, emailSent, smsSent, ...requestLimits },
    password: {
      minLength: r.integer("PASSWORD_MIN_LENGTH", 6, { min: 1, max: 72 }),
      requiredCharacters
    },
    security: {
      refreshTokenRotationEnabled: rotationEnabled,
      refreshTokenReuseInterval: r.duration("SECURITY_REFRESH_TOKEN_REUSE_INTERVAL", Duration.seconds(10)),
      updatePasswordRequireReauthentication: r.boolean("SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION", false),
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
    api: {
      // The embedded default is a development server with a generated secret: keep it on loopback. Unprefixed too,
      // beside PORT: the spec's table names the API settings without a prefix.
      host: Option.getOrElse(r.string("API_HOST", { unprefixed: ["API_HOST"] }), () => (production ? "0.0.0.0" : "127.0.0.1")),
      port,
      endpoint: r.url("API_ENDPOINT"),
      externalUrl,
      requestIdHeader: r.string("REQUEST_ID_HEADER"),
      corsAllowedHeaders: r.list("CORS_ALLOWED_HEADERS", []),
      corsAllowedOrigins
    },
    db: storage.db,
    log: storage.log,
    observability: {
      tracingEnabled: r.boolean("TRACING_ENABLED", false),
      tracingExporter: r.oneOf("TRACING_EXPORTER", ["opentelemetry"], "opentelemetry"),
      metricsEnabled: r.boolean("METRICS_ENABLED", false),
      metricsExporter: r.oneOf("METRICS_EXPORTER", ["opentelemetry", "prometheus"], "opentelemetry"),
      prometheusHost: Option.getOrElse(
        r.string("OTEL_EXPORTER_PROMETHEUS_HOST", { unprefixed: ["OTEL_EXPORTER_PROMETHEUS_HOST"] }), () => "0.0.0.0"),
      prometheusPort: r.integer("OTEL_EXPORTER_PROMETHEUS_PORT", 9100, { min: 1, max: 65535 },
        { unprefixed: ["OTEL_EXPORTER_PROMETHEUS_PORT"] }),
      debug: r.boolean("DEBUG", false),
      resourceAttributes: r.parse("OTEL_RESOURCE_ATTRIBUTES", { unprefixed: ["OTEL_RESOURCE_ATTRIBUTES"] }, {},
        "must be key=value pairs separated by commas (values percent-encoded)", parseKeyValueList),
      serviceName: Option.getOrElse(r.string("OTEL_SERVICE_NAME", { unprefixed: ["OTEL_SERVICE_NAME"] }), () => "gatehouse"),
      otlp: readOtlp(r)
    },
    jwt: {
      secret: jwtSecret,
      keys: jwtKeys,
      keyId: r.string("JWT_KEY_ID"),
      issuer: r.string("JWT_ISSUER"),
      validMethods,
      exp: r.integer("JWT_EXP", 3600, { min: 1, max: 604_800 }),
      aud: Option.getOrElse(r.string("JWT_AUD"), () => "authenticated"),
      adminGroupName: Option.getOrElse(r.string("JWT_ADMIN_GROUP_NAME"), () => "admin"),
      defaultGroupName: Option.getOrElse(r.string("JWT_DEFAULT_GROUP_NAME"), () => "authenticated"),
      adminRoles: r.list("JWT_ADMIN_ROLES", ["service_role", "supabase_admin"])
    },
    external,
    iam,
    smtp: {
      host: smtpHost,
      port: smtpPort,
      user: r.string("SMTP_USER"),
      pass: r.secret("SMTP_PASS"),
      adminEmail,
      senderName: Option.getOrElse(r.string("SMTP_SENDER_NAME"), () => adminEmail),
      maxFrequency: emailFrequency.value,
      linkMinInterval: emailFrequency.developed ? Duration.zero : RECOVERY_MIN_INTERVAL
    },
    mailer: {
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
      subjects: {
        invite: Option.getOrElse(r.string("MAILER_SUBJECTS_INVITE"), () => "You have been invited"),
        confirmation: Option.getOrElse(r.string("MAILER_SUBJECTS_CONFIRMATION"), () => "Confirm Your Signup"),
        recovery: Option.getOrElse(r.string("MAILER_SUBJECTS_RECOVERY"), () => "Reset Your Password"),
        magicLink: Option.getOrElse(r.string("MAILER_SUBJECTS_MAGIC_LINK"), () => "Your Magic Link"),
        emailChange: Option.getOrElse(r.string("MAILER_SUBJECTS_EMAIL_CHANGE"), () => "Confirm Email Change")
      },
      templates: {
        invite: r.url("MAILER_TEMPLATES_INVITE"),
        confirmation: r.url("MAILER_TEMPLATES_CONFIRMATION"),
        recovery: r.url("MAILER_TEMPLATES_RECOVERY"),
        magicLink: r.url("MAILER_TEMPLATES_MAGIC_LINK"),
        emailChange: r.url("MAILER_TEMPLATES_EMAIL_CHANGE")
      }
    },
    sms: {
      autoconfirm: r.boolean("SMS_AUTOCONFIRM", false),
      maxFrequency: smsFrequency.value,
      otpExp: r.duration("SMS_OTP_EXP", Duration.seconds(60)),
      otpLength: r.integer("SMS_OTP_LENGTH", 6, { min: 6, max: 10 }),
      provider: smsProvider,
      template: Option.getOrElse(r.string("SMS_TEMPLATE"), () => DEFAULT_SMS_TEMPLATE),
      testOtp,
      ...sms
    }
  }
  return r.issues.length > 0 ? Either.left(r.issues) : Either.right({ config, defaulted, warnings })
}

const MAX_WORKERS = 1024

/**
 * The standard OTLP exporter variables, read without a prefix like every OpenTelemetry SDK (and with AUTH_, like
 * every other setting). A signal's own endpoint is used as given; the shared one gets the signal's path, as the
 * OTLP specification says. No endpoint leaves the exporter's default (a collector on localhost).
 */
const readOtlp = (r: SettingsReader): AppConfig["observability"]["otlp"] => {
  const shared = r.url("OTEL_EXPORTER_OTLP_ENDPOINT", { unprefixed: ["OTEL_EXPORTER_OTLP_ENDPOINT"] })
  const protocol = r.oneOf("OTEL_EXPORTER_OTLP_PROTOCOL", ["grpc", "http/protobuf", "http/json"], "http/protobuf",
    { unprefixed: ["OTEL_EXPORTER_OTLP_PROTOCOL"] })
  // gRPC has no per-signal path: the endpoint is the collector's address.
  const withPath = (signal: "traces" | "metrics") =>
    Option.map(shared, (base) => (protocol === "grpc" ? base : `${base.replace(/\/+$/, "")}/v1/${signal}`))
  const headers = r.parse("OTEL_EXPORTER_OTLP_HEADERS", { unprefixed: ["OTEL_EXPORTER_OTLP_HEADERS"] }, {},
    "must be key=value pairs separated by commas (values percent-encoded)", parseKeyValueList)
  return {
    protocol,
    tracesEndpoint: Option.orElse(
      r.url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", { unprefixed: ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] }),
      () => withPath("traces")
    ),
    metricsEndpoint: Option.orElse(
      r.url("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", { unprefixed: ["OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"] }),
      () => withPath("metrics")
    ),
    headers: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, Redacted.make(value)]))
  }
}

/**
 * AUTH_WORKERS: how many processes serve the ports. The embedded database lives in one process, so there a
 * larger value is read (and checked) but only warned about: a production .env tried without DATABASE_URL still
 * starts.
 */
const readWorkers = (r: SettingsReader, production: boolean, cores: number, warnings: Array<string>): number => {
  const workers = r.integer("WORKERS", production ? Math.min(Math.max(cores, 1), MAX_WORKERS) : 1, { min: 1, max: MAX_WORKERS })
  if (production) return workers
  if (workers > 1) {
    const variable = Option.match(r.lookup("WORKERS"), { onNone: () => r.canonical("WORKERS"), onSome: (found) => found.variable })
    warnings.push(`${variable}=${workers} is ignored: the embedded database serves from one process (set DATABASE_URL to use several)`)
  }
  return 1
}

const PASERK_SECRET = /^k4\.secret\.([A-Za-z0-9_-]{86})$/
const PASERK_PUBLIC = /^k4\.public\.([A-Za-z0-9_-]{43})$/
const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/

// Structure only: whether the key is a usable Ed25519 key is checked when the IAM service starts.
const isSigningKey = (raw: string): boolean =>
  PASERK_SECRET.test(raw) || /^-----BEGIN PRIVATE KEY-----(\\n|\n)[A-Za-z0-9+/=\s\\n]+-----END PRIVATE KEY-----\s*$/.test(raw)

const parsePublicKeys = (raw: string): Option.Option<ReadonlyArray<IamPublicKey>> => {
  const keys: Array<IamPublicKey> = []
  for (const entry of raw.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
    const [kid = "", paserk = "", ...extra] = entry.split("=")
    if (extra.length > 0 || !KEY_ID.test(kid) || !PASERK_PUBLIC.test(paserk)) return Option.none()
    keys.push({ kid, paserk })
  }
  return Option.some(keys)
}

const parseIamConfig = (r: SettingsReader, production: boolean, warnings: Array<string>): IamConfig => {
  const signingKey = r.secret("IAM_PASETO_SECRET_KEY")
  if (Option.isSome(signingKey) && !isSigningKey(Redacted.value(signingKey.value))) {
    r.fail(r.canonical("IAM_PASETO_SECRET_KEY"), "must be a PASERK k4.secret key or an Ed25519 PKCS#8 PEM private key")
  }
  const enabled = r.boolean("IAM_ENABLED", !production || Option.isSome(signingKey))
  // Off by default in production without a key: said at start-up, so that a missing key is not a missing service.
  if (production && !enabled && Option.isNone(r.lookup("IAM_ENABLED"))) {
    warnings.push(`the IAM service is off: ${r.canonical("IAM_PASETO_SECRET_KEY")} is not set (\`node dist/main.js iam generate-key\` makes one; ${
      r.canonical("IAM_ENABLED")}=false says it is off on purpose)`)
  }
  if (enabled && production && Option.isNone(signingKey)) {
    r.fail(r.canonical("IAM_PASETO_SECRET_KEY"), "is required when the IAM service is enabled with DATABASE_URL set")
  }
  const keyId = r.string("IAM_PASETO_KEY_ID")
  if (Option.isSome(keyId) && !KEY_ID.test(keyId.value)) {
    r.fail(r.canonical("IAM_PASETO_KEY_ID"), "must be 1 to 64 letters, digits, '_', '-' or '.'")
  }
  const accessTokenTtl = r.duration("IAM_ACCESS_TOKEN_TTL", Duration.minutes(15))
  const refreshTokenTtl = r.duration("IAM_REFRESH_TOKEN_TTL", Duration.days(30))
  if (Duration.lessThan(accessTokenTtl, Duration.seconds(1))) r.fail(r.canonical("IAM_ACCESS_TOKEN_TTL"), "must be at least 1s")
  if (Duration.lessThan(refreshTokenTtl, accessTokenTtl)) {
    r.fail(r.canonical("IAM_REFRESH_TOKEN_TTL"), "must not be shorter than AUTH_IAM_ACCESS_TOKEN_TTL")
  }
  const backoff = r.duration("IAM_LOGIN_BACKOFF", Duration.seconds(1))
  const backoffMax = r.duration("IAM_LOGIN_BACKOFF_MAX", Duration.minutes(15))
  if (Duration.lessThan(backoff, Duration.millis(1))) r.fail(r.canonical("IAM_LOGIN_BACKOFF"), "must be at least 1ms")
  if (Duration.lessThan(backoffMax, backoff)) r.fail(r.canonical("IAM_LOGIN_BACKOFF_MAX"), "must not be shorter than AUTH_IAM_LOGIN_BACKOFF")
  const clientFailures = r.integer("IAM_LOGIN_CLIENT_FAILURES", 30, { min: 1, max: 1_000_000 })
  const clientPeriod = r.duration("IAM_LOGIN_CLIENT_PERIOD", Duration.minutes(15))
  if (Duration.lessThan(clientPeriod, Duration.seconds(1))) r.fail(r.canonical("IAM_LOGIN_CLIENT_PERIOD"), "must be at least 1s")
  const loginThrottle: IamLoginThrottle = {
    backoffAfter: r.integer("IAM_LOGIN_BACKOFF_AFTER", 5, { min: 1, max: 1000 }),
    backoff,
    backoffMax,
    forgetAfter: r.duration("IAM_LOGIN_FORGET_AFTER", Duration.hours(24)),
    clientFailures: { events: clientFailures, per: clientPeriod, burst: clientFailures }
  }
  const adminEmail = r.string("IAM_BOOTSTRAP_ADMIN_EMAIL")
  if (Option.isSome(adminEmail) && !adminEmail.value.includes("@")) {
    r.fail(r.canonical("IAM_BOOTSTRAP_ADMIN_EMAIL"), "must be an email address")
  }
  return {
    enabled,
    grpcHost: Option.getOrElse(r.string("IAM_GRPC_HOST"), () => (production ? "0.0.0.0" : "127.0.0.1")),
    grpcPort: r.integer("IAM_GRPC_PORT", 50051, { min: 0, max: 65535 }),
    signingKey,
    keyId,
    previousPublicKeys: r.parse("IAM_PASETO_PUBLIC_KEYS", undefined, [] as ReadonlyArray<IamPublicKey>,
      "must be a comma-separated list of <key id>=k4.public.<key>", parsePublicKeys),
    issuer: Option.getOrElse(r.string("IAM_ISSUER"), () => "gatehouse-iam"),
    accessTokenTtl,
    refreshTokenTtl,
    refreshTokenReuseInterval: r.duration("IAM_REFRESH_TOKEN_REUSE_INTERVAL", Duration.seconds(10)),
    maxMessageBytes: r.integer("IAM_MAX_MESSAGE_BYTES", 64 * 1024, { min: 1024, max: 16 * 1024 * 1024 }),
    adminRole: Option.getOrElse(r.string("IAM_ADMIN_ROLE"), () => "admin"),
    cacheRefreshInterval: r.duration("IAM_CACHE_REFRESH_INTERVAL", Duration.seconds(5)),
    loginThrottle,
    bootstrapAdmin: {
      username: r.string("IAM_BOOTSTRAP_ADMIN_USERNAME"),
      email: adminEmail,
      password: r.secret("IAM_BOOTSTRAP_ADMIN_PASSWORD")
    }
  }
}

/** One message listing every broken variable, as printed before exit code 1. */
export const formatConfigIssues = (issues: ReadonlyArray<ConfigIssue>): string =>
  [`Invalid configuration (${issues.length} problem${issues.length === 1 ? "" : "s"}):`,
    ...issues.map((issue) => `  - ${issue.variable} ${issue.rule}`)].join("\n")

const normalizeLogLevel = (level: LogLevelName | "warning"): LogLevelName => (level === "warning" ? "warn" : level)

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

const REQUESTS_RULE = "must be a number of requests, not negative (decimals allowed, e.g. 30 or 2.5)"

// GoTrue reads these as float64: a decimal number, with an exponent if need be. Negative rates and Inf are refused.
const parseRequests = (raw: string): Option.Option<number> =>
  Option.filter(
    Option.liftPredicate(raw, (text) => /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/.test(text)).pipe(Option.map(Number)),
    Number.isFinite
  )

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

/** What `migrate` needs: where the database is and how to log, none of the settings only the server uses. */
export interface DatabaseSettings {
  readonly mode: DatabaseMode
  readonly dataDir: string
  readonly db: AppConfig["db"]
  readonly log: AppConfig["log"]
}

/**
 * Reads only the database and logging settings, by the same rules as `parseAppConfig`, so an operator can run
 * `migrate` from a deploy job that does not hold the SMTP, JWT or URL settings.
 */
export const parseDatabaseSettings = (
  env: Readonly<Record<string, string | undefined>>
): Either.Either<DatabaseSettings, ReadonlyArray<ConfigIssue>> => {
  const r = new SettingsReader(env)
  // DB_DRIVER stays optional here: a migration run has only the one driver to use, and it is one process.
  const settings: DatabaseSettings = { mode: readMode(env), dataDir: readDataDir(env), ...readStorage(r, false, 1) }
  return r.issues.length > 0 ? Either.left(r.issues) : Either.right(settings)
}

/**
 * The database and logging settings, read the same way for the server and for `migrate`; the pool's default depends
 * on how many processes each hold one.
 */
const readStorage = (r: SettingsReader, driverRequired: boolean, workers: number): Pick<AppConfig, "db" | "log"> => {
  const urlNames = { unprefixed: ["DATABASE_URL"] }
  const url = r.lookup("DB_DATABASE_URL", urlNames)
  if (Option.isSome(url) && !/^postgres(ql)?:\/\//.test(url.value.value)) {
    r.fail(url.value.variable, "must be a postgres:// or postgresql:// connection string")
  }
  const driver = r.lookup("DB_DRIVER")
  if (driverRequired && Option.isNone(driver)) r.fail(r.canonical("DB_DRIVER"), "is required")
  if (Option.isSome(driver) && driver.value.value !== "postgres") r.fail(driver.value.variable, "must be postgres")
  const namespaceNames = { unprefixed: ["DB_NAMESPACE"] }
  const namespace = r.lookup("DB_NAMESPACE", namespaceNames)
  if (Option.isSome(namespace) && !NAMESPACE.test(namespace.value.value)) {
    r.fail(namespace.value.variable, "must be a lowercase SQL identifier (letters, digits, underscores; at most 41 characters)")
  }
  return {
    db: {
      driver: "postgres",
      url: r.secret("DB_DATABASE_URL", urlNames),
      // 0, set explicitly, is GoTrue's "no limit"; unset is a share of a budget (DefaultPoolSize).
      maxPoolSize: r.integer("DB_MAX_POOL_SIZE", defaultPoolSize(workers), { min: 0, max: 10_000 }),
      namespace: Option.match(namespace, { onNone: () => "", onSome: (found) => found.value })
    },
    log: {
      level: normalizeLogLevel(r.oneOf("LOG_LEVEL", LOG_LEVELS, "info", { unprefixed: ["LOG_LEVEL"] })),
      file: r.string("LOG_FILE", { unprefixed: ["LOG_FILE"] })
    }
  }
}
