import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Context, Schema } from "effect"
import { VERSION } from "../Version.js"
import { AuthError } from "./domain/AuthError.js"
import type { IdentityRow, UserRow } from "./domain/UserRow.js"
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
const noNul = { message: () => "must not contain the NUL character" }
const InputString = Schema.String.pipe(Schema.filter((s) => !hasNul(s), noNul))
const InputObject = JsonObject.pipe(Schema.filter((o) => !hasNul(o), noNul))
/** GoTrue treats a JSON null like an absent field. */
const OptionalString = Schema.optional(Schema.NullOr(InputString))
const OptionalObject = Schema.optional(Schema.NullOr(InputObject))
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

export const VerifyPayload = Schema.Struct({
  type: OptionalString,
  token: OptionalString,
  token_hash: OptionalString,
  email: OptionalString,
  phone: OptionalString,
  redirect_to: OptionalString
})

export const SignupPayload = Schema.Struct({
  email: OptionalString,
  phone: OptionalString,
  password: OptionalString,
  data: OptionalObject,
  channel: OptionalString,
  code_challenge: OptionalString,
  code_challenge_method: OptionalString,
  gotrue_meta_security: MetaSecurity
})

export const OtpPayload = Schema.Struct({
  email: OptionalString,
  phone: OptionalString,
  create_user: Schema.optional(Schema.NullOr(Schema.Boolean)),
  data: OptionalObject,
  channel: OptionalString,
  code_challenge: OptionalString,
  code_challenge_method: OptionalString,
  gotrue_meta_security: MetaSecurity
})

export const MagicLinkPayload = Schema.Struct({
  email: OptionalString,
  data: OptionalObject,
  code_challenge: OptionalString,
  code_challenge_method: OptionalString,
  gotrue_meta_security: MetaSecurity
})

export const RecoverPayload = Schema.Struct({
  email: OptionalString,
  code_challenge: OptionalString,
  code_challenge_method: OptionalString,
  gotrue_meta_security: MetaSecurity
})

export const ResendPayload = Schema.Struct({
  type: OptionalString,
  email: OptionalString,
  phone: OptionalString,
  code_challenge: OptionalString,
  code_challenge_method: OptionalString,
  gotrue_meta_security: MetaSecurity
})

export const InvitePayload = Schema.Struct({
  email: OptionalString,
  data: OptionalObject
})

export const GenerateLinkPayload = Schema.Struct({
  type: OptionalString,
  email: OptionalString,
  new_email: OptionalString,
  password: OptionalString,
  data: OptionalObject,
  redirect_to: OptionalString
})

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

export const TokenPayload = Schema.Struct({
  email: OptionalString,
  phone: OptionalString,
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
})

export const UserUpdatePayload = Schema.Struct({
  email: OptionalString,
  phone: OptionalString,
  password: OptionalString,
  nonce: OptionalString,
  current_password: OptionalString,
  data: OptionalObject,
  app_metadata: OptionalObject,
  channel: OptionalString,
  code_challenge: OptionalString,
  code_challenge_method: OptionalString
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
  failure: AuthError,
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
export class AdminAuthenticated extends HttpApiMiddleware.Tag<AdminAuthenticated>()("auth/AdminAuthenticated", {
  failure: AuthError,
  provides: CurrentAdmin,
  security: { bearer: AdminToken }
}) {}

/** The same, for /invite: the spec lets the service role invite even when JWT_ADMIN_ROLES leaves it out. */
export class InviterAuthenticated extends HttpApiMiddleware.Tag<InviterAuthenticated>()("auth/InviterAuthenticated", {
  failure: AuthError,
  provides: CurrentAdmin,
  security: { bearer: AdminToken }
}) {}

/**
 * GoTrue's verifyCaptcha: with SECURITY_CAPTCHA_ENABLED, the request's captcha token must pass the provider's check
 * before the handler runs (an admin JWT skips it).
 */
export class CaptchaProtected extends HttpApiMiddleware.Tag<CaptchaProtected>()("auth/CaptchaProtected", {
  failure: AuthError
}) {}

/** The same for POST /token, whose refresh_token, pkce and id_token grants are exempt, as in GoTrue. */
export class TokenCaptchaProtected extends HttpApiMiddleware.Tag<TokenCaptchaProtected>()("auth/TokenCaptchaProtected", {
  failure: AuthError
}) {}

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
      .setUrlParams(Schema.Struct({ redirect_to: Schema.optional(Schema.String) }))
      .addSuccess(Schema.Union(Session, User))
  )
  .middleware(CaptchaProtected)
  .annotate(OpenApi.Title, "Signup")
  .annotate(OpenApi.Description, "Sign-up with an email address, a phone number, or anonymously") {}

export class TokenGroup extends HttpApiGroup.make("token")
  .add(
    HttpApiEndpoint.post("token", "/token")
      .setPayload(TokenPayload)
      .setUrlParams(Schema.Struct({ grant_type: Schema.optional(Schema.String) }))
      .addSuccess(Session)
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
  .annotate(OpenApi.Title, "SSO")
  .annotate(OpenApi.Description, "SAML 2.0 single sign-on: disabled, every route answers 404 saml_provider_disabled") {}

export class VerifyGroup extends HttpApiGroup.make("verify")
  .add(
    HttpApiEndpoint.post("verify", "/verify")
      .setPayload(VerifyPayload)
      .addSuccess(Schema.Union(Session, EmailChangeAccepted))
  )
  .add(
    HttpApiEndpoint.get("verifyLink", "/verify")
      .setUrlParams(Schema.Struct({
        token: Schema.optional(Schema.String),
        type: Schema.optional(Schema.String),
        redirect_to: Schema.optional(Schema.String)
      }))
      .addSuccess(Schema.Void.annotations({ description: "See Other: to redirect_to with the session, or the error, in the fragment" }), { status: 303 })
  )
  .annotate(OpenApi.Title, "Verify")
  .annotate(OpenApi.Description, "Confirms a sign-up, an email change or a phone change with an emailed or texted code or link") {}

const CallbackParams = Schema.Struct({
  state: Schema.optional(Schema.String),
  code: Schema.optional(Schema.String),
  error: Schema.optional(Schema.String),
  error_description: Schema.optional(Schema.String),
  oauth_token: Schema.optional(Schema.String.annotations({ description: "OAuth 1.0a (twitter): the request token, in place of state" })),
  oauth_verifier: Schema.optional(Schema.String.annotations({ description: "OAuth 1.0a (twitter): the verifier, in place of code" })),
  denied: Schema.optional(Schema.String.annotations({ description: "OAuth 1.0a (twitter): the request token of a sign-in the user refused" })),
  user: Schema.optional(Schema.String.annotations({ description: "Apple: the user's name as JSON, posted on the first consent only" }))
})

const Found = (description: string) => Schema.Void.annotations({ description })

export class ExternalGroup extends HttpApiGroup.make("external")
  .add(
    HttpApiEndpoint.get("authorize", "/authorize")
      .setUrlParams(Schema.Struct({
        provider: Schema.optional(Schema.String),
        scopes: Schema.optional(Schema.String.annotations({ description: "Scopes beyond the provider's defaults, separated by spaces or commas" })),
        redirect_to: Schema.optional(Schema.String),
        code_challenge: Schema.optional(Schema.String),
        code_challenge_method: Schema.optional(Schema.String)
      }))
      .addSuccess(Found("Found: to the provider's sign-in page"), { status: 302 })
  )
  .add(
    HttpApiEndpoint.get("continueAuthorize", "/authorize/continue")
      .setUrlParams(Schema.Struct({ state: Schema.optional(Schema.String) }))
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
  )
  .add(
    HttpApiEndpoint.post("callbackPost", "/callback")
      .setUrlParams(CallbackParams)
      .setPayload(CallbackParams.pipe(HttpApiSchema.withEncoding({ kind: "UrlParams" })))
      .addSuccess(Found("Found: as GET /callback, for providers that post their answer (response_mode=form_post)"), { status: 302 })
  )
  .annotate(OpenApi.Title, "External providers")
  .annotate(OpenApi.Description, "Sign-in with an external identity provider (OAuth 2.0 / OpenID Connect)") {}

const RedirectParam = Schema.Struct({ redirect_to: Schema.optional(Schema.String) })

export class OtpGroup extends HttpApiGroup.make("otp")
  .add(HttpApiEndpoint.post("otp", "/otp").setPayload(OtpPayload).setUrlParams(RedirectParam).addSuccess(MessageSent))
  .add(HttpApiEndpoint.post("magiclink", "/magiclink").setPayload(MagicLinkPayload).setUrlParams(RedirectParam).addSuccess(MessageSent))
  .middleware(CaptchaProtected)
  .annotate(OpenApi.Title, "OTP")
  .annotate(OpenApi.Description, "Passwordless sign-in: a magic link or code by email, a code by SMS; new addresses are signed up") {}

export class RecoverGroup extends HttpApiGroup.make("recover")
  .add(HttpApiEndpoint.post("recover", "/recover").setPayload(RecoverPayload).setUrlParams(RedirectParam).addSuccess(Schema.Struct({})))
  .middleware(CaptchaProtected)
  .annotate(OpenApi.Title, "Recover")
  .annotate(OpenApi.Description, "Password recovery: mails a code and link that sign in; answers `{}` for any address") {}

export class ResendGroup extends HttpApiGroup.make("resend")
  .add(HttpApiEndpoint.post("resend", "/resend").setPayload(ResendPayload).setUrlParams(RedirectParam).addSuccess(MessageSent))
  .middleware(CaptchaProtected)
  .annotate(OpenApi.Title, "Resend")
  .annotate(OpenApi.Description, "Sends a pending sign-up confirmation again") {}

export class ProfileGroup extends HttpApiGroup.make("profile")
  .add(HttpApiEndpoint.get("getUser", "/user").addSuccess(User))
  .add(
    HttpApiEndpoint.put("updateUser", "/user")
      .setPayload(UserUpdatePayload)
      .setUrlParams(Schema.Struct({ redirect_to: Schema.optional(Schema.String) }))
      .addSuccess(User)
  )
  .add(HttpApiEndpoint.get("reauthenticate", "/reauthenticate").addSuccess(Schema.Struct({})))
  .middleware(Authenticated)
  .annotate(OpenApi.Title, "Profile")
  .annotate(OpenApi.Description, "The signed-in user: each call needs `Authorization: Bearer <access token>`") {}

export class IdentitiesGroup extends HttpApiGroup.make("identities")
  .add(
    HttpApiEndpoint.get("linkIdentity", "/user/identities/authorize")
      .setUrlParams(Schema.Struct({
        provider: Schema.optional(Schema.String),
        scopes: Schema.optional(Schema.String),
        redirect_to: Schema.optional(Schema.String),
        code_challenge: Schema.optional(Schema.String),
        code_challenge_method: Schema.optional(Schema.String),
        skip_http_redirect: Schema.optional(Schema.String.annotations({ description: "`true`: answer the URL as JSON instead of 302 Found" }))
      }))
      .addSuccess(Schema.Struct({ url: Schema.String }))
      .annotate(
        OpenApi.Description,
        "Starts a provider's sign-in whose callback adds the identity to the caller (302 Found to the provider, or `{url}` with skip_http_redirect=true)"
      )
  )
  .add(
    HttpApiEndpoint.del("unlinkIdentity", "/user/identities/:identity_id")
      .setPath(Schema.Struct({ identity_id: Schema.String }))
      .addSuccess(Schema.Struct({}))
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
      .setUrlParams(Schema.Struct({ scope: Schema.optional(Schema.String) }))
      .addSuccess(Schema.Void, { status: 204 })
  )
  .middleware(Authenticated)
  .annotate(OpenApi.Title, "Logout")
  .annotate(OpenApi.Description, "Ends the caller's sessions: needs `Authorization: Bearer <access token>`") {}

const UserIdParam = Schema.Struct({ user_id: Schema.String })
const OptionalBoolean = Schema.optional(Schema.NullOr(Schema.Boolean))

/** POST /admin/users[/{user_id}] and PUT /admin/users/{user_id} (reference §2.16): every field optional. */
export const AdminUserPayload = Schema.Struct({
  id: OptionalString,
  aud: OptionalString,
  role: OptionalString,
  email: OptionalString,
  phone: OptionalString,
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

export class AdminUsersGroup extends HttpApiGroup.make("adminUsers")
  .add(
    HttpApiEndpoint.get("listUsers", "/admin/users")
      .setUrlParams(Schema.Struct({
        page: Schema.optional(Schema.String),
        per_page: Schema.optional(Schema.String.annotations({ description: "Default 50, at most 1000" })),
        filter: Schema.optional(Schema.String.annotations({ description: "Part of the email, phone or user_metadata.full_name, in any case" }))
      }))
      .addSuccess(AdminUserList)
      .annotate(OpenApi.Description, "Newest first; `X-Total-Count` and a `Link` header (rel next and last) as GoTrue sends them")
  )
  .add(HttpApiEndpoint.post("createUser", "/admin/users").setPayload(AdminUserPayload).addSuccess(User))
  .add(
    HttpApiEndpoint.post("createUserWithId", "/admin/users/:user_id").setPath(UserIdParam).setPayload(AdminUserPayload).addSuccess(User)
  )
  .add(HttpApiEndpoint.get("getUser", "/admin/users/:user_id").setPath(UserIdParam).addSuccess(User))
  .add(HttpApiEndpoint.put("updateUser", "/admin/users/:user_id").setPath(UserIdParam).setPayload(AdminUserPayload).addSuccess(User))
  .add(
    HttpApiEndpoint.del("deleteUser", "/admin/users/:user_id")
      .setPath(UserIdParam)
      .setPayload(AdminUserDeletePayload)
      .addSuccess(Schema.Struct({}))
  )
  .add(
    HttpApiEndpoint.get("listFactors", "/admin/users/:user_id/factors")
      .setPath(UserIdParam)
      .addSuccess(Schema.Array(JsonObject))
  )
  .middleware(AdminAuthenticated)
  .annotate(OpenApi.Title, "Admin: users")
  .annotate(OpenApi.Description, "User management: each call needs `Authorization: Bearer <admin JWT>` (the service_role key)") {}

export class AdminLinksGroup extends HttpApiGroup.make("adminLinks")
  .add(
    HttpApiEndpoint.post("generateLink", "/admin/generate_link")
      .setPayload(GenerateLinkPayload)
      .setUrlParams(Schema.Struct({ redirect_to: Schema.optional(Schema.String) }))
      .addSuccess(GeneratedLink)
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
      .setUrlParams(Schema.Struct({ redirect_to: Schema.optional(Schema.String) }))
      .addSuccess(User)
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
      .setUrlParams(Schema.Struct({
        page: Schema.optional(Schema.String),
        per_page: Schema.optional(Schema.String),
        query: Schema.optional(Schema.String.annotations({ description: "`author:<text>`, `action:<text>` or `type:<text>`, matched case-insensitively anywhere in the field" }))
      }))
      .addSuccess(Schema.Array(AuditEntry))
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
  .addError(AuthError)
  .annotate(OpenApi.Title, "Gatehouse Auth")
  .annotate(OpenApi.Version, VERSION)
  .annotate(
    OpenApi.Description,
    `A Supabase Auth (GoTrue) compatible authentication server. Every auth path is served both at the root and under \`${AUTH_PREFIX}\`, where supabase-js calls it (choose it in the Servers list).`
  )
  .annotate(OpenApi.Servers, [
    { url: "/", description: "The auth API at the root" },
    { url: AUTH_PREFIX, description: "The same API where supabase-js calls it" }
  ]) {}
