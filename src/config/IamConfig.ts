import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type { ReadContext } from "./ReadContext.js"
import type { RequestLimit } from "./RequestLimit.js"
import type { SettingsReader } from "./SettingsReader.js"

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
  /** Two-step verification's sign-in tickets (docs/iam.md, "Two-step verification"). */
  readonly loginTicket: {
    /** How long Login's second-step ticket can be redeemed (AUTH_IAM_LOGIN_TICKET_TTL). */
    readonly ttl: Duration.Duration
    /** Wrong codes a ticket takes before it is deleted (AUTH_IAM_LOGIN_TICKET_ATTEMPTS). */
    readonly attempts: number
    /**
     * Wrong codes an account's TOTP factor takes, over every ticket and call, before it refuses every code until its
     * window ends (AUTH_IAM_TOTP_MAX_FAILURES per AUTH_IAM_TOTP_FAILURE_WINDOW): a guesser who has the password gets
     * new tickets, but not new guesses.
     */
    readonly maxFailures: number
    readonly failureWindow: Duration.Duration
  }
  /**
   * OAuth2 sign-in (docs/iam.md, "OAuth2 sign-in"): where the auth server's OAuth providers send the browser back
   * with the code for the IAM service (AUTH_IAM_OAUTH_REDIRECT_URI, the app's page that calls FinishOAuthSignIn). None:
   * off, and StartOAuthSignIn/FinishOAuthSignIn answer FAILED_PRECONDITION.
   */
  readonly oauth: {
    readonly redirectUri: Option.Option<string>
    /** How long a started sign-in can be finished (AUTH_IAM_OAUTH_FLOW_TTL). */
    readonly flowTtl: Duration.Duration
  }
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

export const IamConfig = Context.GenericTag<IamConfig>("config/IamConfig")

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

/** Reads the IAM service's settings through `r`, which collects their issues with the platform's and auth's. */
export const readIamConfig = (r: SettingsReader, ctx: ReadContext): IamConfig => {
  const production = ctx.production
  const signingKey = r.secret("IAM_PASETO_SECRET_KEY")
  if (Option.isSome(signingKey) && !isSigningKey(Redacted.value(signingKey.value))) {
    r.fail(r.canonical("IAM_PASETO_SECRET_KEY"), "must be a PASERK k4.secret key or an Ed25519 PKCS#8 PEM private key")
  }
  const enabled = r.boolean("IAM_ENABLED", !production || Option.isSome(signingKey))
  // Off by default in production without a key: said at start-up, so that a missing key is not a missing service.
  if (production && !enabled && Option.isNone(r.lookup("IAM_ENABLED"))) {
    ctx.warnings.push(`the IAM service is off: ${r.canonical("IAM_PASETO_SECRET_KEY")} is not set (\`node dist/main.js iam generate-key\` makes one; ${
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
  const ticketTtl = r.duration("IAM_LOGIN_TICKET_TTL", Duration.minutes(5))
  if (Duration.lessThan(ticketTtl, Duration.seconds(1))) r.fail(r.canonical("IAM_LOGIN_TICKET_TTL"), "must be at least 1s")
  const failureWindow = r.duration("IAM_TOTP_FAILURE_WINDOW", Duration.minutes(15))
  if (Duration.lessThan(failureWindow, Duration.seconds(1))) r.fail(r.canonical("IAM_TOTP_FAILURE_WINDOW"), "must be at least 1s")
  const oauthFlowTtl = r.duration("IAM_OAUTH_FLOW_TTL", Duration.minutes(10))
  if (Duration.lessThan(oauthFlowTtl, Duration.seconds(1))) r.fail(r.canonical("IAM_OAUTH_FLOW_TTL"), "must be at least 1s")
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
    loginTicket: {
      ttl: ticketTtl,
      attempts: r.integer("IAM_LOGIN_TICKET_ATTEMPTS", 5, { min: 1, max: 100 }),
      maxFailures: r.integer("IAM_TOTP_MAX_FAILURES", 10, { min: 1, max: 1000 }),
      failureWindow
    },
    oauth: { redirectUri: r.url("IAM_OAUTH_REDIRECT_URI"), flowTtl: oauthFlowTtl },
    bootstrapAdmin: {
      username: r.string("IAM_BOOTSTRAP_ADMIN_USERNAME"),
      email: adminEmail,
      password: r.secret("IAM_BOOTSTRAP_ADMIN_PASSWORD")
    }
  }
}
