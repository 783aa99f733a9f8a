import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Context, Schema } from "effect"
import { VERSION } from "../Version.js"
import { OAUTH_PROVIDERS } from "./oauth/OAuthProviders.js"
import { EMAIL_PATTERN, MAX_EMAIL_LENGTH } from "./domain/Email.js"
import { PHONE_PATTERN } from "./domain/Phone.js"
import { CODE_CHALLENGE_PATTERN } from "./domain/Pkce.js"
import type { IdentityRow, UserRow } from "./domain/UserRow.js"
import { VERIFY_TYPES } from "./domain/Verification.js"
import { AuthErrors } from "./http/AuthErrors.js"
import { AUTH_PREFIX } from "./http/AuthPrefix.js"

export class Health extends Schema.Class<Health>("Health")({
  version: Schema.String,
  name: Schema.String,
  description: Schema.String
}) {}

/** GoTrue v2.196's /settings, key for key: clients and dashboards read it, so it has no keys of our own. */
export class Settings extends Schema.Class<Settings>("Settings")({
  external: Schema.Record({ key: Schema.String, value: Schema.Boolean }),
  disable_signup: Schema.Boolean,
  autoconfirm: Schema.Boolean.annotations({
    description: "Whether an email sign-up is confirmed at once (MAILER_AUTOCONFIRM); the same value as mailer_autoconfirm, under the name the Settings object of the spec gives it"
  }),
  mailer_autoconfirm: Schema.Boolean,
  phone_autoconfirm: Schema.Boolean,
  sms_provider: Schema.String,
  saml_enabled: Schema.Boolean,
  saml_private_key_next_configured: Schema.Boolean,
  passkeys_enabled: Schema.Boolean
}) {}

const Timestamp = Schema.String.annotations({ description: "RFC 3339 timestamp" })
const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

// PostgreSQL cannot store U+0000 in text or jsonb; refusing it here keeps it a 400 instead of a database error.
const hasNul = (value: unknown): boolean =>
  typeof value === "string"
    ? value.includes("\u0000")
    : Array.isArray(value)
    ? value.some(hasNul)
    : typeof value === "object" && value !== null
    ? Object.entries(value).some(([key, v]) => key.includes("\u0000") || hasNul(v))
    : false
const noNul = { message: () => "must not contain the NUL character", jsonSchema: { pattern: "^[^\\u0000]*$" } }
const InputString = Schema.String.pipe(Schema.filter((s) => !hasNul(s), noNul))
const InputObject = JsonObject.pipe(Schema.filter((o) => !hasNul(o), noNul))
/** GoTrue treats a JSON null like an absent field. */
const OptionalString = Schema.optional(Schema.NullOr(InputString))
const OptionalObject = Schema.optional(Schema.NullOr(InputObject))
/** A query or path parameter: text without NUL, which PostgreSQL could not compare against (a 500 otherwise). */
const OptionalParam = Schema.optional(InputString)

/*
 * Fields whose rules the services check after decoding (with GoTrue's own messages, so the decoder stays lenient):
 * the document states the rules, so a client generated from it, or a tester, sends what the server accepts.
 */
const documented = (jsonSchema: Record<string, unknown>, description?: string) =>
  InputString.annotations({ jsonSchema, ...(description === undefined ? {} : { description }) })
/** A body field's pattern, where the services read "" as absent (GoTrue's zero value), as they read null. */
const orEmpty = (pattern: string) => `^$|${pattern}`
const EmailString = documented(
  { pattern: orEmpty(EMAIL_PATTERN), maxLength: MAX_EMAIL_LENGTH },
  "An email address, its local part at most 64 characters (\"\" counts as absent)"
)
const PhoneString = documented({ pattern: orEmpty(PHONE_PATTERN) }, "A phone number in E.164, with or without the leading + (\"\" counts as absent)")
const OneOf = (values: ReadonlyArray<string>, description?: string) => documented({ enum: [...values] }, description)
const OptionalEmail = Schema.optional(Schema.NullOr(EmailString))
/** EmailString's format as JSON Schema, for a field that has it only in some cases (GenerateLinkPayload's new_email). */
const EMAIL_FORMAT = { type: "string", pattern: orEmpty(EMAIL_PATTERN), maxLength: MAX_EMAIL_LENGTH }
const OptionalPhone = Schema.optional(Schema.NullOr(PhoneString))
/** JSON Schema for "these fields are present": non-empty strings (null and "" count as absent, as in GoTrue). */
const present = (...fields: ReadonlyArray<string>) => ({
  required: [...fields],
  properties: Object.fromEntries(fields.map((field) => [field, { type: "string", minLength: 1 }]))
})
/** The same, when the body's `type` is one of `types`. */
const typed = (types: ReadonlyArray<string>, rule: ReturnType<typeof present>) => ({
  ...rule,
  properties: { ...rule.properties, type: { enum: [...types] } }
})
const absent = (...fields: ReadonlyArray<string>) => ({ not: { anyOf: fields.map((field) => present(field)) } })
/** A body the services refuse unless it meets every rule (JSON Schema, stated in the document only). */
const requiring = <S extends Schema.Schema.Any>(schema: S, ...rules: ReadonlyArray<Record<string, unknown>>) =>
  (schema as any).annotations({ jsonSchema: { allOf: rules } }) as S
/** PKCE (Pkce.parsePkce): a challenge of 43 to 128 characters and its method, both or neither. */
const CHALLENGE_METHOD_PATTERN = "^([sS]256|[pP][lL][aA][iI][nN])$"
const CodeChallenge = Schema.optional(Schema.NullOr(documented({ pattern: orEmpty(CODE_CHALLENGE_PATTERN) })))
const CodeChallengeMethod = Schema.optional(Schema.NullOr(documented({ pattern: orEmpty(CHALLENGE_METHOD_PATTERN) }, "s256 or plain, in any case")))
const PKCE_PAIRED = { anyOf: [absent("code_challenge", "code_challenge_method"), present("code_challenge", "code_challenge_method")] }
/** The formats of CodeChallenge and CodeChallengeMethod, for a body that checks them only in some cases (/signup). */
const PKCE_FORMATS = {
  properties: {
    code_challenge: { anyOf: [{ type: "null" }, { type: "string", pattern: orEmpty(CODE_CHALLENGE_PATTERN) }] },
    code_challenge_method: { anyOf: [{ type: "null" }, { type: "string", pattern: orEmpty(CHALLENGE_METHOD_PATTERN) }] }
  }
}
const MetaSecurity = Schema.optional(Schema.NullOr(Schema.Struct({ captcha_token: OptionalString })))

export class Identity extends Schema.Class<Identity>("Identity")({
  identity_id: Schema.String,
  id: Schema.String,
  user_id: Schema.String,
  identity_data: JsonObject,
  provider: Schema.String,
  last_sign_in_at: Schema.optional(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
  email: Schema.optional(Schema.String)
}) {}

export class User extends Schema.Class<User>("User")({
  id: Schema.String,
  aud: Schema.String,
  role: Schema.String,
  email: Schema.String,
  email_confirmed_at: Schema.optional(Timestamp),
  phone: Schema.String,
  phone_confirmed_at: Schema.optional(Timestamp),
  confirmation_sent_at: Schema.optional(Timestamp),
  confirmed_at: Schema.optional(Timestamp),
  recovery_sent_at: Schema.optional(Timestamp),
  new_email: Schema.optional(Schema.String),
  email_change_sent_at: Schema.optional(Timestamp),
  new_phone: Schema.optional(Schema.String),
  phone_change_sent_at: Schema.optional(Timestamp),
  reauthentication_sent_at: Schema.optional(Timestamp),
  last_sign_in_at: Schema.optional(Timestamp),
  app_metadata: JsonObject,
  user_metadata: JsonObject,
  identities: Schema.Array(Identity),
  created_at: Timestamp,
  updated_at: Timestamp,
  is_anonymous: Schema.Boolean,
  invited_at: Schema.optional(Timestamp),
  banned_until: Schema.optional(Timestamp)
}) {}

export class Session extends Schema.Class<Session>("Session")({
  access_token: Schema.String,
  token_type: Schema.Literal("bearer"),
  expires_in: Schema.Int,
  expires_at: Schema.Int,
  refresh_token: Schema.String,
  user: User,
  /** The provider's tokens, after a sign-in with an external provider (the PKCE exchange of its code). */
  provider_token: Schema.optional(Schema.String),
  provider_refresh_token: Schema.optional(Schema.String),
  weak_password: Schema.optional(Schema.Struct({ message: Schema.String, reasons: Schema.Array(Schema.String) }))
}) {}

/** POST /verify's answer to the first confirmation of a double email change (`code` is a string, as in GoTrue). */
export class EmailChangeAccepted extends Schema.Class<EmailChangeAccepted>("EmailChangeAccepted")({
  msg: Schema.String,
  code: Schema.String
}) {}

export const VerifyPayload = requiring(
  Schema.Struct({
    type: Schema.optional(Schema.NullOr(OneOf(VERIFY_TYPES))),
    token: OptionalString,
    token_hash: OptionalString,
    email: OptionalEmail,
    phone: OptionalPhone,
    redirect_to: OptionalString
  }),
  {
    ...present("type"),
    anyOf: [present("token_hash"), { ...present("token"), anyOf: [present("email"), present("phone")] }]
  }
)

export const SignupPayload = requiring(
  Schema.Struct({
    email: OptionalEmail,
    phone: OptionalPhone,
    password: OptionalString,
    data: OptionalObject,
    channel: Schema.optional(Schema.NullOr(InputString.annotations({
      description: "How a phone sign-up's code is sent: `sms` (also when empty or absent) or `whatsapp` (Twilio only; otherwise 400 validation_failed). Not read for an email or anonymous sign-up"
    }))),
    code_challenge: OptionalString,
    code_challenge_method: OptionalString,
    gotrue_meta_security: MetaSecurity
  }),
  {
    description: "An email address or a phone number with a password (PKCE only with an email address); neither is an " +
      "anonymous sign-in, which reads nothing else but `data` and `gotrue_meta_security`, as in GoTrue.",
    anyOf: [
      { allOf: [present("email", "password"), absent("phone"), PKCE_PAIRED, PKCE_FORMATS] },
      { allOf: [present("phone", "password"), absent("email", "code_challenge", "code_challenge_method")] },
      absent("email", "phone")
    ]
  }
)

export const OtpPayload = requiring(
  Schema.Struct({
    email: OptionalEmail,
    phone: OptionalPhone,
    create_user: Schema.optional(Schema.NullOr(Schema.Boolean)),
    data: OptionalObject,
    channel: Schema.optional(Schema.NullOr(OneOf(["sms", "whatsapp", ""], "How a phone code is sent; empty or absent means sms (GoTrue's default)"))),
    code_challenge: CodeChallenge,
    code_challenge_method: CodeChallengeMethod,
    gotrue_meta_security: MetaSecurity
  }),
  { anyOf: [{ ...present("email"), ...absent("phone", "channel") }, { ...present("phone"), ...absent("email") }] },
  PKCE_PAIRED
)

export const MagicLinkPayload = requiring(
  Schema.Struct({
    email: OptionalEmail,
    data: OptionalObject,
    code_challenge: CodeChallenge,
    code_challenge_method: CodeChallengeMethod,
    gotrue_meta_security: MetaSecurity
  }),
  present("email"),
  PKCE_PAIRED
)

export const RecoverPayload = requiring(
  Schema.Struct({
    email: OptionalEmail,
    code_challenge: CodeChallenge,
    code_challenge_method: CodeChallengeMethod,
    gotrue_meta_security: MetaSecurity
  }),
  present("email"),
  PKCE_PAIRED
)

export const ResendPayload = requiring(
  Schema.Struct({
    type: Schema.optional(Schema.NullOr(OneOf(["signup", "email_change", "sms", "phone_change"]))),
    email: OptionalEmail,
    phone: OptionalPhone,
    code_challenge: CodeChallenge,
    code_challenge_method: CodeChallengeMethod,
    gotrue_meta_security: MetaSecurity
  }),
  {
    ...present("type"),
    anyOf: [
      { ...typed(["signup", "email_change"], present("email")), ...absent("phone") },
      { ...typed(["sms", "phone_change"], present("phone")), ...absent("email") }
    ]
  },
  PKCE_PAIRED
)

export const InvitePayload = requiring(Schema.Struct({ email: OptionalEmail, data: OptionalObject }), present("email"))

const LINK_TYPES = ["signup", "invite", "magiclink", "recovery", "email_change_current", "email_change_new"]

export const GenerateLinkPayload = requiring(
  Schema.Struct({
    type: Schema.optional(Schema.NullOr(OneOf(LINK_TYPES))),
    email: OptionalEmail,
    new_email: Schema.optional(Schema.NullOr(InputString.annotations({ description: "The new address, read for the email_change types only" }))),
    password: OptionalString,
    data: OptionalObject,
    redirect_to: OptionalString
  }),
  present("type", "email"),
  {
    anyOf: [
      typed(["invite", "magiclink", "recovery"], present()),
      typed(["signup"], present("password")),
      { ...typed(["email_change_current", "email_change_new"], present("new_email")), allOf: [{ properties: { new_email: EMAIL_FORMAT } }] }
    ]
  }
)

/** /admin/generate_link's answer: the user's fields, flattened, beside the link and its parts (auth-js splits them). */
export class GeneratedLink extends Schema.Class<GeneratedLink>("GeneratedLink")({
  ...User.fields,
  action_link: Schema.String,
  email_otp: Schema.String,
  hashed_token: Schema.String,
  verification_type: Schema.String,
  redirect_to: Schema.String
}) {}

/** What /otp and /resend answer: `{}`, or the SMS provider's id when a text went to a known number. */
export const MessageSent = Schema.Struct({ message_id: Schema.optional(Schema.String) })

/** The grants' bodies (reference §2.3): which one applies is the query's grant_type. */
export const TokenPayload = requiring(Schema.Struct({
  email: OptionalEmail,
  phone: OptionalPhone,
  password: OptionalString,
  refresh_token: OptionalString,
  auth_code: OptionalString,
  code_verifier: OptionalString,
  id_token: OptionalString,
  access_token: OptionalString,
  nonce: OptionalString,
  provider: OptionalString,
  client_id: OptionalString,
  issuer: OptionalString,
  gotrue_meta_security: MetaSecurity
}), {
  anyOf: [
    { ...present("password"), anyOf: [present("email"), present("phone")] },
    present("refresh_token"),
    present("auth_code", "code_verifier"),
    { ...present("id_token"), anyOf: [present("provider"), present("client_id", "issuer")] }
  ]
})

export const UserUpdatePayload = requiring(Schema.Struct({
  email: OptionalEmail,
  phone: OptionalPhone,
  password: OptionalString,
  nonce: OptionalString,
  current_password: OptionalString,
  data: OptionalObject,
  app_metadata: OptionalObject,
  channel: Schema.optional(Schema.NullOr(InputString.annotations({
    description: "How a phone change's code is sent: `sms` (also when empty or absent) or `whatsapp` (Twilio only; otherwise 400 validation_failed). Not read without a new phone"
  }))),
  code_challenge: OptionalString,
  code_challenge_method: OptionalString
}), {
  description: "PKCE belongs to an email change: `code_challenge` and `code_challenge_method` are read (both or " +
    "neither, well formed) only with an `email` other than the user's own, and ignored otherwise, as in GoTrue.",
  anyOf: [absent("email"), { allOf: [PKCE_PAIRED, PKCE_FORMATS] }]
})

/** The signed-in caller, established by the Authenticated middleware. */
export class CurrentUser extends Context.Tag("auth/CurrentUser")<CurrentUser, {
  readonly user: UserRow
  /** The user's identities, oldest first (read with the user: GET /user answers with them). */
  readonly identities: ReadonlyArray<IdentityRow>
  /** The session named by the token's session_id claim, when it has one. */
  readonly sessionId: string | undefined
  /** The verified token's claims. */
  readonly claims: Readonly<Record<string, unknown>>
}>() {}

/** The access token of a session, as `Authorization: Bearer <access token>`. */
const AccessToken = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(OpenApi.Format, "JWT"),
  HttpApiSecurity.annotate(OpenApi.Description, "A session's access token, from /token or /signup")
)

/** GoTrue's requireAuthentication: a valid bearer JWT whose user and session still exist. */
export class Authenticated extends HttpApiMiddleware.Tag<Authenticated>()("auth/Authenticated", {
  failure: Schema.Union(
    AuthErrors.invalid(401, ["no_authorization"]),
    AuthErrors.refused(403, ["bad_jwt", "user_not_found", "session_not_found", "user_banned"]),
    AuthErrors.refused(400, ["bad_jwt"], "`bad_jwt` with 400 when the token's sub is not a UUID, as GoTrue answers.")
  ),
  provides: CurrentUser,
  security: { bearer: AccessToken }
}) {}

/** The caller of an admin route, established by AdminAuthenticated: its verified claims. */
export class CurrentAdmin extends Context.Tag("auth/CurrentAdmin")<CurrentAdmin, {
  readonly claims: Readonly<Record<string, unknown>>
}>() {}

/** A JWT whose role is an admin role, such as the service_role key `node dist/main.js keys` prints. */
const AdminToken = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(OpenApi.Format, "JWT"),
  HttpApiSecurity.annotate(OpenApi.Description, "A JWT whose `role` claim is in JWT_ADMIN_ROLES, such as the service_role key")
)

/** GoTrue's requireAdminCredentials: a valid bearer JWT whose `role` is in JWT_ADMIN_ROLES; `sub` is not checked. */
const AdminRefusals = Schema.Union(
  AuthErrors.invalid(401, ["no_authorization"]),
  AuthErrors.refused(403, ["bad_jwt", "not_admin", "session_expired"])
)

export class AdminAuthenticated extends HttpApiMiddleware.Tag<AdminAuthenticated>()("auth/AdminAuthenticated", {
  failure: AdminRefusals,
  provides: CurrentAdmin,
  security: { serviceRole: AdminToken }
}) {}

/** The same, for /invite: the spec lets the service role invite even when JWT_ADMIN_ROLES leaves it out. */
export class InviterAuthenticated extends HttpApiMiddleware.Tag<InviterAuthenticated>()("auth/InviterAuthenticated", {
  failure: AdminRefusals,
  provides: CurrentAdmin,
  security: { serviceRole: AdminToken }
}) {}

/**
 * GoTrue's verifyCaptcha: with SECURITY_CAPTCHA_ENABLED, the request's captcha token must pass the provider's check
 * before the handler runs (an admin JWT skips it).
 */
const CaptchaRefusals = Schema.Union(
  AuthErrors.refused(400, ["captcha_failed"], "`captcha_failed` with SECURITY_CAPTCHA_ENABLED, for a missing or refused token."),
  AuthErrors.refused(503, ["captcha_failed"], "`captcha_failed` with 503 when the captcha provider cannot be asked (GoTrue: 500).")
)

export class CaptchaProtected extends HttpApiMiddleware.Tag<CaptchaProtected>()("auth/CaptchaProtected", {
  failure: CaptchaRefusals
}) {}

/** The same for POST /token, whose refresh_token, pkce and id_token grants are exempt, as in GoTrue. */
export class TokenCaptchaProtected extends HttpApiMiddleware.Tag<TokenCaptchaProtected>()("auth/TokenCaptchaProtected", {
  failure: CaptchaRefusals
}) {}

/** Query parameters; `required` names the ones the handler refuses to go without (decoded as optional: GoTrue's error). */
const QueryParams = <F extends Schema.Struct.Fields>(fields: F, required: ReadonlyArray<keyof F & string> = []) =>
  required.length === 0 ? Schema.Struct(fields) : Schema.Struct(fields).annotations({ jsonSchema: { required: [...required] } })

const RedirectParam = QueryParams({ redirect_to: OptionalParam })

/*
 * What the flows that send mail or texts can answer besides their own errors: the send quotas and windows, and a
 * text that could not go out.
 */
const SendsMail = AuthErrors.refused(429, ["over_email_send_rate_limit"])
const SendsText = Schema.Union(AuthErrors.refused(429, ["over_sms_send_rate_limit"]), AuthErrors.refused(422, ["sms_send_failed"]))
/** The per-IP request limits (RATE_LIMIT_*, with RATE_LIMIT_HEADER). */
const RateLimited = AuthErrors.refused(429, ["over_request_rate_limit"])

export class SettingsGroup extends HttpApiGroup.make("settings")
  .add(HttpApiEndpoint.get("health", "/health").addSuccess(Health))
  .add(HttpApiEndpoint.get("settings", "/settings").addSuccess(Settings))
  .add(HttpApiEndpoint.get("jwks", "/.well-known/jwks.json").addSuccess(Schema.Struct({ keys: Schema.Array(JsonObject) })))
  .annotate(OpenApi.Title, "System")
  .annotate(OpenApi.Description, "Service health, public settings and signing keys") {}

export class SignupGroup extends HttpApiGroup.make("signup")
  .add(
    HttpApiEndpoint.post("signup", "/signup")
      .setPayload(SignupPayload)
      .setUrlParams(RedirectParam)
      .addSuccess(Schema.Union(Session, User))
      .addError(AuthErrors.refused(400, ["email_provider_disabled", "phone_provider_disabled", "user_already_exists", "validation_failed"],
        "A phone number already registered is 400 `user_already_exists` (the spec's status; GoTrue: 422)."))
      .addError(AuthErrors.refused(422, ["anonymous_provider_disabled", "signup_disabled", "user_already_exists", "weak_password"],
        "GoTrue answers 422 for an address already registered (with MAILER_AUTOCONFIRM) or a password the policy refuses, where a strict reading of HTTP would say 409."))
      .addError(SendsMail)
      .addError(SendsText)
      .addError(RateLimited)
      .annotate(OpenApi.Description, "With MAILER_AUTOCONFIRM (or PHONE_AUTOCONFIRM) the answer is a session; otherwise the user, whose address must be confirmed (an address already registered answers a user that has no identities, so it reveals nothing).")
  )
  .middleware(CaptchaProtected)
  .annotate(OpenApi.Title, "Signup")
  .annotate(OpenApi.Description, "Sign-up with an email address, a phone number, or anonymously") {}

const GRANTS = ["password", "refresh_token", "pkce", "id_token"]

export class TokenGroup extends HttpApiGroup.make("token")
  .add(
    HttpApiEndpoint.post("token", "/token")
      .setPayload(TokenPayload)
      .setUrlParams(QueryParams({ grant_type: Schema.optional(OneOf(GRANTS, "Which grant the body is for")) }, ["grant_type"]))
      .addSuccess(Session)
      .addError(AuthErrors.refused(400, [
        "invalid_credentials", "email_not_confirmed", "phone_not_confirmed", "user_banned", "refresh_token_not_found",
        "refresh_token_already_used", "session_not_found", "session_expired", "bad_code_verifier", "provider_disabled",
        "validation_failed"
      ], "GoTrue answers 400 to a grant it refuses (wrong password, unknown or reused refresh token, unknown grant_type), where a strict reading of HTTP would say 401 or 422; Gatehouse keeps GoTrue's answer."))
      .addError(AuthErrors.oauth(["invalid request", "invalid nonce"], "The id_token grant refuses a token as GoTrue's OAuthError does."))
      .addError(AuthErrors.refused(403, ["user_banned"]))
      .addError(AuthErrors.refused(404, ["flow_state_not_found"]))
      .addError(AuthErrors.refused(422, ["flow_state_expired", "email_provider_disabled", "phone_provider_disabled", "signup_disabled", "email_exists", "web3_provider_disabled"],
        "`web3_provider_disabled`: grant_type=web3, with Web3 sign-in off (GoTrue's answer)."))
      .addError(RateLimited)
      .annotate(OpenApi.Description, "The grant is the query's `grant_type`; the body carries that grant's fields.")
  )
  .middleware(TokenCaptchaProtected)
  .annotate(OpenApi.Title, "Token")
  .annotate(OpenApi.Description, "Sign-in: the password, refresh_token, pkce and id_token grants (web3 answers 422 web3_provider_disabled)") {}

/**
 * SAML single sign-on. It is not served yet: with SAML off, GoTrue answers every /sso route 404
 * saml_provider_disabled before it reads the request, and so does this group (its bodies are not read).
 */
export class SsoGroup extends HttpApiGroup.make("sso")
  .add(HttpApiEndpoint.post("sso", "/sso").addSuccess(Schema.Struct({ url: Schema.String })))
  .add(HttpApiEndpoint.get("samlMetadata", "/sso/saml/metadata").addSuccess(Schema.String))
  .add(HttpApiEndpoint.post("samlAcs", "/sso/saml/acs").addSuccess(Schema.Struct({})))
  .addError(AuthErrors.refused(404, ["saml_provider_disabled"], "SAML is off: every /sso route answers this, as GoTrue does."))
  .annotate(OpenApi.Title, "SSO")
  .annotate(OpenApi.Description, "SAML 2.0 single sign-on: disabled, every route answers 404 saml_provider_disabled") {}

const VerificationRefusals = Schema.Union(
  AuthErrors.refused(403, ["otp_expired", "user_banned"]),
  AuthErrors.refused(404, ["flow_state_not_found"]),
  AuthErrors.refused(422, ["email_exists", "phone_exists"]),
  RateLimited
)

export class VerifyGroup extends HttpApiGroup.make("verify")
  .add(
    HttpApiEndpoint.post("verify", "/verify")
      .setPayload(VerifyPayload)
      .addSuccess(Schema.Union(Session, EmailChangeAccepted))
      .addError(VerificationRefusals)
      .addError(AuthErrors.refused(400, ["validation_failed"], "A code that is not one of the user's pending ones is 403 `otp_expired`, as in GoTrue."))
  )
  .add(
    HttpApiEndpoint.get("verifyLink", "/verify")
      .setUrlParams(QueryParams({
        token: OptionalParam,
        type: Schema.optional(InputString.annotations({ description: `One of ${VERIFY_TYPES.join(", ")}` })),
        redirect_to: OptionalParam
      }))
      .addSuccess(
        Schema.Void.annotations({
          description: "See Other: to redirect_to with the session, or the error (a missing or unknown token or type too), in the fragment"
        }),
        { status: 303 }
      )
      .addError(VerificationRefusals)
      .addError(AuthErrors.invalid(400, ["validation_failed"]))
  )
  .annotate(OpenApi.Title, "Verify")
  .annotate(OpenApi.Description, "Confirms a sign-up, an email change or a phone change with an emailed or texted code or link") {}

const CallbackParams = Schema.Struct({
  state: OptionalParam,
  code: OptionalParam,
  error: OptionalParam,
  error_description: OptionalParam,
  oauth_token: Schema.optional(InputString.annotations({ description: "OAuth 1.0a (twitter): the request token, in place of state" })),
  oauth_verifier: Schema.optional(InputString.annotations({ description: "OAuth 1.0a (twitter): the verifier, in place of code" })),
  denied: Schema.optional(InputString.annotations({ description: "OAuth 1.0a (twitter): the request token of a sign-in the user refused" })),
  user: Schema.optional(InputString.annotations({ description: "Apple: the user's name as JSON, posted on the first consent only" }))
})

/** What a provider posts back (Apple's form_post): its own fields too, which GoTrue ignores, and so does Gatehouse. */
const CallbackForm = CallbackParams.annotations({ jsonSchema: { additionalProperties: true } })

const Found = (description: string) => Schema.Void.annotations({ description })

const CallbackRefusals = Schema.Union(
  AuthErrors.refused(400, ["bad_oauth_state", "bad_oauth_callback", "oauth_provider_not_supported", "validation_failed"],
    "When the flow cannot be told where to redirect (no state, or one that names no flow), the error is answered here, not in a redirect."),
  AuthErrors.refused(422, ["flow_state_expired"])
)

const PROVIDERS = documented({ enum: [...OAUTH_PROVIDERS] }, "One of the providers this server knows (it must also be enabled)")

export class ExternalGroup extends HttpApiGroup.make("external")
  .add(
    HttpApiEndpoint.get("authorize", "/authorize")
      .setUrlParams(QueryParams({
        provider: Schema.optional(PROVIDERS),
        scopes: Schema.optional(InputString.annotations({ description: "Scopes beyond the provider's defaults, separated by spaces or commas" })),
        redirect_to: OptionalParam,
        code_challenge: Schema.optional(documented({ pattern: CODE_CHALLENGE_PATTERN })),
        code_challenge_method: Schema.optional(documented({ pattern: "^([sS]256|[pP][lL][aA][iI][nN])$" }))
      }, ["provider"]))
      .addSuccess(Found("Found: to the provider's sign-in page"), { status: 302 })
      .addError(AuthErrors.refused(400, ["validation_failed"], "A provider that is not enabled is 400 `validation_failed` \"Unsupported provider\", as in GoTrue."))
  )
  .add(
    HttpApiEndpoint.get("continueAuthorize", "/authorize/continue")
      .setUrlParams(QueryParams({ state: OptionalParam }))
      .addSuccess(
        Found(
          "Found: to the provider's sign-in page, with the flow now bound to this browser (the URL GET /user/identities/authorize hands out when SECURITY_OAUTH_BROWSER_BINDING_ENABLED), or to SITE_URL with the error in the fragment"
        ),
        { status: 302 }
      )
  )
  .add(
    HttpApiEndpoint.get("callback", "/callback")
      .setUrlParams(CallbackParams)
      .addSuccess(Found("Found: to redirect_to with the session (or `?code=` in the PKCE flow), or the error, in the fragment"), {
        status: 302
      })
      .addError(CallbackRefusals)
  )
  .add(
    HttpApiEndpoint.post("callbackPost", "/callback")
      .setUrlParams(CallbackParams)
      .setPayload(CallbackForm.pipe(HttpApiSchema.withEncoding({ kind: "UrlParams" })))
      .addSuccess(Found("Found: as GET /callback, for providers that post their answer (response_mode=form_post)"), { status: 302 })
      .addError(CallbackRefusals)
  )
  .annotate(OpenApi.Title, "External providers")
  .annotate(OpenApi.Description, "Sign-in with an external identity provider (OAuth 2.0 / OpenID Connect)") {}

const PasswordlessRefusals = Schema.Union(
  AuthErrors.refused(422, ["signup_disabled", "email_provider_disabled", "otp_disabled"],
    "GoTrue answers 422 when the address is unknown and create_user is false (`otp_disabled`) or sign-ups are off."),
  SendsMail,
  RateLimited
)

export class OtpGroup extends HttpApiGroup.make("otp")
  .add(
    HttpApiEndpoint.post("otp", "/otp").setPayload(OtpPayload).setUrlParams(RedirectParam).addSuccess(MessageSent)
      .addError(PasswordlessRefusals)
      .addError(SendsText)
      .addError(AuthErrors.refused(400, ["phone_provider_disabled", "validation_failed"], "Phone sign-in needs EXTERNAL_PHONE_ENABLED (GoTrue's 400)."))
  )
  .add(
    HttpApiEndpoint.post("magiclink", "/magiclink").setPayload(MagicLinkPayload).setUrlParams(RedirectParam).addSuccess(MessageSent)
      .addError(PasswordlessRefusals)
  )
  .middleware(CaptchaProtected)
  .annotate(OpenApi.Title, "OTP")
  .annotate(OpenApi.Description, "Passwordless sign-in: a magic link or code by email, a code by SMS; new addresses are signed up") {}

export class RecoverGroup extends HttpApiGroup.make("recover")
  .add(
    HttpApiEndpoint.post("recover", "/recover").setPayload(RecoverPayload).setUrlParams(RedirectParam).addSuccess(Schema.Struct({}))
      .addError(AuthErrors.refused(400, ["email_provider_disabled"], "Recovery needs EXTERNAL_EMAIL_ENABLED (GoTrue's 400)."))
      .addError(SendsMail)
      .addError(RateLimited)
  )
  .middleware(CaptchaProtected)
  .annotate(OpenApi.Title, "Recover")
  .annotate(OpenApi.Description, "Password recovery: mails a code and link that sign in; answers `{}` for any address") {}

export class ResendGroup extends HttpApiGroup.make("resend")
  .add(
    HttpApiEndpoint.post("resend", "/resend").setPayload(ResendPayload).setUrlParams(RedirectParam).addSuccess(MessageSent)
      .addError(SendsMail)
      .addError(SendsText)
      .addError(RateLimited)
  )
  .middleware(CaptchaProtected)
  .annotate(OpenApi.Title, "Resend")
  .annotate(OpenApi.Description, "Sends a pending sign-up confirmation again") {}

export class ProfileGroup extends HttpApiGroup.make("profile")
  .add(
    HttpApiEndpoint.get("getUser", "/user").addSuccess(User)
      .addError(AuthErrors.refused(400, ["validation_failed"], "An X-JWT-AUD that differs from the token's audience is 400, as in GoTrue."))
  )
  .add(
    HttpApiEndpoint.put("updateUser", "/user")
      .setPayload(UserUpdatePayload)
      .setUrlParams(RedirectParam)
      .addSuccess(User)
      .addError(AuthErrors.refused(400, ["reauthentication_needed", "validation_failed"]))
      .addError(AuthErrors.refused(403, ["not_admin"], "app_metadata is for admins."))
      .addError(AuthErrors.refused(422, ["reauthentication_not_valid", "same_password", "email_exists", "phone_exists", "weak_password", "validation_failed"],
        "GoTrue answers 422 for an address already taken or a password the policy refuses, where a strict reading of HTTP would say 409."))
      .addError(SendsMail)
      .addError(SendsText)
      .addError(RateLimited)
  )
  .add(
    HttpApiEndpoint.get("reauthenticate", "/reauthenticate").addSuccess(Schema.Struct({}))
      .addError(AuthErrors.refused(422, ["validation_failed", "email_not_confirmed", "phone_not_confirmed"]))
      .addError(SendsMail)
      .addError(SendsText)
  )
  .middleware(Authenticated)
  .annotate(OpenApi.Title, "Profile")
  .annotate(OpenApi.Description, "The signed-in user: each call needs `Authorization: Bearer <access token>`") {}

const LinkingRefusals = Schema.Union(
  AuthErrors.refused(404, ["manual_linking_disabled"], "Manual linking needs SECURITY_MANUAL_LINKING_ENABLED."),
  AuthErrors.refused(403, ["unexpected_audience"])
)

export class IdentitiesGroup extends HttpApiGroup.make("identities")
  .add(
    HttpApiEndpoint.get("linkIdentity", "/user/identities/authorize")
      .setUrlParams(QueryParams({
        provider: Schema.optional(PROVIDERS),
        scopes: OptionalParam,
        redirect_to: OptionalParam,
        code_challenge: Schema.optional(documented({ pattern: CODE_CHALLENGE_PATTERN })),
        code_challenge_method: Schema.optional(documented({ pattern: "^([sS]256|[pP][lL][aA][iI][nN])$" })),
        skip_http_redirect: Schema.optional(InputString.annotations({ description: "`true`: answer the URL as JSON instead of 302 Found" }))
      }, ["provider"]))
      .addSuccess(Schema.Struct({ url: Schema.String }))
      .addSuccess(Found("Found: to the provider's sign-in page (without skip_http_redirect=true)"), { status: 302 })
      .addError(LinkingRefusals)
      .addError(AuthErrors.refused(400, ["validation_failed"], "A provider that is not enabled is 400 `validation_failed`, as in GoTrue."))
      .annotate(
        OpenApi.Description,
        "Starts a provider's sign-in whose callback adds the identity to the caller (302 Found to the provider, or `{url}` with skip_http_redirect=true)"
      )
  )
  .add(
    HttpApiEndpoint.del("unlinkIdentity", "/user/identities/:identity_id")
      .setPath(Schema.Struct({ identity_id: InputString }))
      .addSuccess(Schema.Struct({}))
      .addError(LinkingRefusals)
      .addError(AuthErrors.refused(404, ["validation_failed"], "An identity_id that is not a UUID is 404 `validation_failed`, as in GoTrue."))
      .addError(AuthErrors.refused(422, ["single_identity_not_deletable", "identity_not_found", "email_conflict_identity_not_deletable"]))
  )
  .middleware(Authenticated)
  .annotate(OpenApi.Title, "Identities")
  .annotate(
    OpenApi.Description,
    "Manual linking and unlinking of the caller's provider identities (SECURITY_MANUAL_LINKING_ENABLED): needs `Authorization: Bearer <access token>`"
  ) {}

export class LogoutGroup extends HttpApiGroup.make("logout")
  .add(
    HttpApiEndpoint.post("logout", "/logout")
      .setUrlParams(QueryParams({ scope: Schema.optional(OneOf(["global", "local", "others"], "Default global")) }))
      .addSuccess(Schema.Void, { status: 204 })
      .addError(AuthErrors.invalid(400, ["validation_failed"]))
  )
  .middleware(Authenticated)
  .annotate(OpenApi.Title, "Logout")
  .annotate(OpenApi.Description, "Ends the caller's sessions: needs `Authorization: Bearer <access token>`") {}

const UserIdParam = Schema.Struct({ user_id: InputString })
const OptionalBoolean = Schema.optional(Schema.NullOr(Schema.Boolean))

/** POST /admin/users[/{user_id}] and PUT /admin/users/{user_id} (reference §2.16): every field optional. */
export const AdminUserPayload = Schema.Struct({
  id: OptionalString,
  aud: OptionalString,
  role: OptionalString,
  email: OptionalEmail,
  phone: OptionalPhone,
  password: OptionalString,
  password_hash: OptionalString,
  email_confirm: OptionalBoolean,
  phone_confirm: OptionalBoolean,
  user_metadata: OptionalObject,
  app_metadata: OptionalObject,
  ban_duration: OptionalString.annotations({ description: "A Go duration (\"24h\", \"1h30m\"; units ns, us, ms, s, m, h), or \"none\" to lift a ban" })
})

/** DELETE /admin/users/{user_id}: the body is optional (an empty one reads as null). */
export const AdminUserDeletePayload = Schema.NullOr(Schema.Struct({ should_soft_delete: OptionalBoolean }))

export class AdminUserList extends Schema.Class<AdminUserList>("AdminUserList")({
  users: Schema.Array(User),
  aud: Schema.String
}) {}

/** Pagination.parsePage: digits, or nothing for the default; per_page not zero. */
const PageParam = Schema.optional(documented({ pattern: "^[0-9]{0,15}$" }, "Default 1"))
const PerPageParam = Schema.optional(documented({ pattern: "^((?!0+$)[0-9]{1,15})?$" }, "Default 50, at most 1000"))

const AdminUserRefusals = Schema.Union(
  AuthErrors.refused(400, ["validation_failed"]),
  AuthErrors.refused(422, ["email_exists", "phone_exists", "user_already_exists", "weak_password"],
    "GoTrue answers 422 for an address already registered or a password the policy refuses, where a strict reading of HTTP would say 409.")
)
const NoSuchUser = AuthErrors.refused(404, ["user_not_found", "validation_failed"], "A user_id that is not a UUID is 404 `validation_failed`, as in GoTrue.")

export class AdminUsersGroup extends HttpApiGroup.make("adminUsers")
  .add(
    HttpApiEndpoint.get("listUsers", "/admin/users")
      .setUrlParams(QueryParams({
        page: PageParam,
        per_page: PerPageParam,
        filter: Schema.optional(InputString.annotations({ description: "Part of the email, phone or user_metadata.full_name, in any case" }))
      }))
      .addSuccess(AdminUserList)
      .addError(AuthErrors.invalid(400, ["validation_failed"]))
      .annotate(OpenApi.Description, "Newest first; `X-Total-Count` and a `Link` header (rel next and last) as GoTrue sends them")
  )
  .add(HttpApiEndpoint.post("createUser", "/admin/users").setPayload(AdminUserPayload).addSuccess(User).addError(AdminUserRefusals))
  .add(
    HttpApiEndpoint.post("createUserWithId", "/admin/users/:user_id").setPath(UserIdParam).setPayload(AdminUserPayload).addSuccess(User)
      .addError(AdminUserRefusals)
  )
  .add(HttpApiEndpoint.get("getUser", "/admin/users/:user_id").setPath(UserIdParam).addSuccess(User).addError(NoSuchUser))
  .add(
    HttpApiEndpoint.put("updateUser", "/admin/users/:user_id").setPath(UserIdParam).setPayload(AdminUserPayload).addSuccess(User)
      .addError(NoSuchUser)
      .addError(AdminUserRefusals)
  )
  .add(
    HttpApiEndpoint.del("deleteUser", "/admin/users/:user_id")
      .setPath(UserIdParam)
      .setPayload(AdminUserDeletePayload)
      .addSuccess(Schema.Struct({}))
      .addError(NoSuchUser)
  )
  .add(
    HttpApiEndpoint.get("listFactors", "/admin/users/:user_id/factors")
      .setPath(UserIdParam)
      .addSuccess(Schema.Array(JsonObject))
      .addError(NoSuchUser)
  )
  .middleware(AdminAuthenticated)
  .annotate(OpenApi.Title, "Admin: users")
  .annotate(OpenApi.Description, "User management: each call needs `Authorization: Bearer <admin JWT>` (the service_role key)") {}

export class AdminLinksGroup extends HttpApiGroup.make("adminLinks")
  .add(
    HttpApiEndpoint.post("generateLink", "/admin/generate_link")
      .setPayload(GenerateLinkPayload)
      .setUrlParams(RedirectParam)
      .addSuccess(GeneratedLink)
      .addError(AuthErrors.refused(400, ["validation_failed"]))
      .addError(AuthErrors.refused(404, ["user_not_found"]))
      .addError(AuthErrors.refused(422, ["email_exists", "weak_password"],
        "GoTrue answers 422 for an address already registered, where a strict reading of HTTP would say 409."))
  )
  .middleware(AdminAuthenticated)
  .annotate(OpenApi.Title, "Admin: links")
  .annotate(
    OpenApi.Description,
    "Makes the link and code of a sign-up, invite, magic link, recovery or email change without mailing it: needs `Authorization: Bearer <admin JWT>`"
  ) {}

export class InviteGroup extends HttpApiGroup.make("invite")
  .add(
    HttpApiEndpoint.post("invite", "/invite")
      .setPayload(InvitePayload)
      .setUrlParams(RedirectParam)
      .addSuccess(User)
      .addError(AuthErrors.refused(400, ["validation_failed"]))
      .addError(AuthErrors.refused(422, ["email_exists"], "GoTrue answers 422 for an address already registered, where a strict reading of HTTP would say 409."))
      .addError(SendsMail)
  )
  .middleware(InviterAuthenticated)
  .annotate(OpenApi.Title, "Invite")
  .annotate(OpenApi.Description, "Mails an invitation that confirms the address and signs in: needs `Authorization: Bearer <admin or service_role JWT>`") {}

/** An audit_log_entries row as GET /admin/audit lists it: GoTrue's JSON, which leaves instance_id out. */
export class AuditEntry extends Schema.Class<AuditEntry>("AuditEntry")({
  id: Schema.String,
  payload: JsonObject.annotations({ description: "{actor_id, actor_username, actor_name?, actor_via_sso, action, log_type, traits?}" }),
  created_at: Timestamp,
  ip_address: Schema.String
}) {}

export class AdminAuditGroup extends HttpApiGroup.make("adminAudit")
  .add(
    HttpApiEndpoint.get("auditLog", "/admin/audit")
      .setUrlParams(QueryParams({
        page: PageParam,
        per_page: PerPageParam,
        query: Schema.optional(documented(
          // Any text after the prefix, line breaks included, but no NUL (PostgreSQL could not compare it).
          { pattern: "^((author|action|type):[^\\u0000]*)?$" },
          "`author:<text>`, `action:<text>` or `type:<text>`, matched case-insensitively anywhere in the field"
        ))
      }))
      .addSuccess(Schema.Array(AuditEntry))
      .addError(AuthErrors.invalid(400, ["validation_failed"]))
  )
  .middleware(AdminAuthenticated)
  .annotate(OpenApi.Title, "Admin: audit log")
  .annotate(OpenApi.Description, "The audit log, newest first, with `Link` and `X-Total-Count` paging headers: needs `Authorization: Bearer <admin JWT>`") {}

/** The auth server's HTTP contract (Supabase Auth wire-compatible). Handlers implement it; OpenAPI comes from it. */
export class AuthApi extends HttpApi.make("gatehouse")
  .add(SettingsGroup)
  .add(SignupGroup)
  .add(TokenGroup)
  .add(VerifyGroup)
  .add(ExternalGroup)
  .add(OtpGroup)
  .add(SsoGroup)
  .add(RecoverGroup)
  .add(ResendGroup)
  .add(ProfileGroup)
  .add(IdentitiesGroup)
  .add(LogoutGroup)
  .add(AdminUsersGroup)
  .add(AdminLinksGroup)
  .add(InviteGroup)
  .add(AdminAuditGroup)
  // What every route can answer: the decoder's and the body reader's refusals, the edge's body limit, an outage.
  .addError(AuthErrors.invalid(400, ["validation_failed", "bad_json"]))
  .addError(AuthErrors.invalid(413, ["request_entity_too_large"]))
  .addError(AuthErrors.refused(503, ["database_unavailable"], "The database cannot be reached (GoTrue: 500); retry later."))
  .annotate(OpenApi.Title, "Gatehouse Auth")
  .annotate(OpenApi.Version, VERSION)
  .annotate(
    OpenApi.Description,
    `A Supabase Auth (GoTrue) compatible authentication server. Every auth path is served both at the root and under \`${AUTH_PREFIX}\`, where supabase-js calls it (choose it in the Servers list).\n\n` +
      "Where GoTrue's answer and a strict reading of HTTP disagree, the server answers as GoTrue does, since clients " +
      "(auth-js) rely on it, and this document says so: a well-formed request refused for what its data meets (a wrong " +
      "password, a bad or expired grant, a taken address, a switched-off provider) is 400 or 422 with the error code " +
      "naming why, not 401, 404 or 409. An operation that answers so lists those statuses in `x-refuses-well-formed`. " +
      "Request bodies state the rules the services check; GoTrue reads `null` and `\"\"` as an absent field, and " +
      "ignores fields it does not know."
  )
  .annotate(OpenApi.Servers, [
    { url: "/", description: "The auth API at the root" },
    { url: AUTH_PREFIX, description: "The same API where supabase-js calls it" }
  ]) {}
