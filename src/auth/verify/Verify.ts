import { Clock, Duration, Effect, Either, Option } from "effect"
import { randomUUID } from "node:crypto"
import { AppConfig } from "../../config/AppConfig.js"
import { compileAllowList } from "../../platform/http/RedirectAllowList.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { EmailChangeAccepted, type Session } from "../Api.js"
import { AuthError } from "../domain/AuthError.js"
import { matchesOtp, sameSecret } from "../domain/OtpToken.js"
import { EMAIL_CHANGE_FLOW, isPkceToken, withoutPkcePrefix } from "../domain/Pkce.js"
import { chooseRedirect } from "../domain/RedirectTo.js"
import { isBanned, type UserRow } from "../domain/UserRow.js"
import {
  codeRedirect,
  errorRedirect,
  isExhausted,
  isOtpExpired,
  isVerifyType,
  messageRedirect,
  otpExpired,
  pkceErrorRedirect,
  pkceMessageRedirect,
  sessionRedirect,
  unsupportedType,
  validateVerifyBody,
  type VerifyBody,
  type VerifyRequest,
  type VerifyType
} from "../domain/Verification.js"
import { AccessTokens } from "../sessions/AccessTokens.js"
import { FlowStateRepo } from "../sessions/FlowStateRepo.js"
import { type AuditEvent, AuditLog } from "../users/AuditLog.js"
import { IdentitiesRepo } from "../users/IdentitiesRepo.js"
import { OtpAttemptsRepo, type OtpTokenKind } from "../users/OtpAttemptsRepo.js"
import { type TokenColumn, type UserPatch, UsersRepo } from "../users/UsersRepo.js"

/** One of a user's pending tokens: where it is stored, whom it was sent to, and how long it lasts. */
interface Slot {
  readonly kind: OtpTokenKind
  readonly column: TokenColumn
  readonly stored: string | null
  readonly recipient: string
  readonly sentAt: Date | null
  readonly validity: Duration.Duration
}

export interface LinkQuery {
  readonly token?: string | undefined
  readonly type?: string | undefined
  readonly redirectTo?: string | undefined
}

/** Types a link (GET) may carry: the mailed ones. */
const LINK_TYPES: ReadonlyArray<VerifyType> = ["signup", "invite", "recovery", "magiclink", "email_change", "email"]

const FIRST_HALF_MESSAGE = "Confirmation link accepted. Please proceed to confirm link sent to the other email"

/**
 * What a fifth wrong code clears. An email change goes whole: clearing one half would leave the other to apply the
 * change alone, and so let a guesser skip the confirmation they cannot give.
 */
const invalidation = (slot: Slot): UserPatch =>
  slot.kind === "email_change_new" || slot.kind === "email_change_current"
    ? { email_change: "", email_change_token_new: "", email_change_token_current: "", email_change_confirm_status: 0 }
    : { [slot.column]: "" }

const lower = (value: string | null): string => (value ?? "").toLowerCase()

/** A typed code matches its hash whether the token was stored for an implicit or a PKCE flow (GoTrue's isOtpValid). */
const matchesCode = (stored: string | null, recipient: string, token: string): boolean =>
  matchesOtp(withoutPkcePrefix(stored), recipient, token)

/** GoTrue's audit entry for a token that did its work: a sign-up confirmed, a link signed in, an address changed. */
const verifiedEvent = (slot: Slot, type: VerifyType): AuditEvent =>
  slot.kind === "confirmation"
    ? { action: "user_signedup", traits: { provider: type === "sms" ? "phone" : "email" } }
    : slot.kind === "recovery"
    ? { action: "login", traits: { provider: "email" } }
    : { action: "user_modified" }

/** What a PKCE link's GET /verify answers with: the code of the flow the mail belonged to. */
interface AuthCode {
  readonly authCode: string
}

/** The flow_state authentication_method a mail of `type` was sent under (see messages/Confirmations, profile). */
const flowMethod = (type: VerifyType, slot: Slot): string =>
  slot.kind === "confirmation"
    ? "email/signup"
    : slot.kind === "email_change_new" || slot.kind === "email_change_current"
    ? EMAIL_CHANGE_FLOW
    : type === "magiclink"
    ? "magiclink"
    : "recovery"

/**
 * POST /verify and GET /verify for the tokens Gatehouse issues: sign-up confirmation and invitation (both in
 * confirmation_token), recovery and magic link (both in recovery_token), email and phone change.
 */
export class Verify extends Effect.Service<Verify>()("auth/Verify", {
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const transactions = yield* Transactions
    const users = yield* UsersRepo
    const identities = yield* IdentitiesRepo
    const attempts = yield* OtpAttemptsRepo
    const flows = yield* FlowStateRepo
    const tokens = yield* AccessTokens
    const audit = yield* AuditLog
    const allowList = compileAllowList(config.uriAllowList)
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    /** The token of `user` that this request names, if the request can name one at all. */
    const slotOf = (user: UserRow, request: VerifyRequest): Option.Option<Slot> => {
      const email = request._tag === "Code" && request.recipient._tag === "Email" ? request.recipient.email : undefined
      const phone = request._tag === "Code" && request.recipient._tag === "Phone" ? request.recipient.phone : undefined
      const byHash = request._tag === "Hash"
      const confirmation = (recipient: string, validity: Duration.Duration): Slot => ({
        kind: "confirmation",
        column: "confirmation_token",
        stored: user.confirmation_token,
        recipient,
        sentAt: user.confirmation_sent_at,
        validity
      })
      const recovery = (): Slot => ({
        kind: "recovery",
        column: "recovery_token",
        stored: user.recovery_token,
        recipient: user.email!,
        sentAt: user.recovery_sent_at,
        validity: config.mailer.otpExp
      })
      const emailChange = (current: boolean): Slot => ({
        kind: current ? "email_change_current" : "email_change_new",
        column: current ? "email_change_token_current" : "email_change_token_new",
        stored: current ? user.email_change_token_current : user.email_change_token_new,
        recipient: (current ? user.email : user.email_change) ?? "",
        sentAt: user.email_change_sent_at,
        validity: config.mailer.otpExp
      })
      // A link carries no address, so its hash must also fit the kind of user: an email type needs an email user,
      // and texted codes come only as codes (GoTrue has no phone links either).
      switch (request.type) {
        // An invitation's code is stored where a sign-up's is (GoTrue's signupVerify serves both).
        case "signup":
        case "invite":
          return (byHash || email !== undefined) && (user.email ?? "") !== ""
            ? Option.some(confirmation(user.email!, config.mailer.otpExp))
            : Option.none()
        case "recovery":
        case "magiclink":
          return (byHash || email !== undefined) && (user.email ?? "") !== "" ? Option.some(recovery()) : Option.none()
        case "email": {
          // An emailed code is either kind: the one whose hash it matches, else the confirmation (for the count).
          if (!(byHash || email !== undefined) || (user.email ?? "") === "") return Option.none()
          const isRecovery = byHash
            ? sameSecret(user.recovery_token, request.tokenHash)
            : request._tag === "Code" && matchesCode(user.recovery_token, user.email!, request.token)
          return Option.some(isRecovery ? recovery() : confirmation(user.email!, config.mailer.otpExp))
        }
        case "sms":
          return phone !== undefined && (user.phone ?? "") !== "" ? Option.some(confirmation(user.phone!, config.sms.otpExp)) : Option.none()
        case "email_change":
          if (byHash) {
            return sameSecret(user.email_change_token_new, request.tokenHash)
              ? Option.some(emailChange(false))
              : sameSecret(user.email_change_token_current, request.tokenHash)
              ? Option.some(emailChange(true))
              : Option.none()
          }
          return email === undefined
            ? Option.none()
            : email === lower(user.email_change)
            ? Option.some(emailChange(false))
            : email === lower(user.email)
            ? Option.some(emailChange(true))
            : Option.none()
        case "phone_change":
          return phone !== undefined
            ? Option.some({
              kind: "phone_change",
              column: "phone_change_token",
              stored: user.phone_change_token,
              recipient: user.phone_change ?? "",
              sentAt: user.phone_change_sent_at,
              validity: config.sms.otpExp
            })
            : Option.none()
        default:
          return Option.none()
      }
    }

    const candidate = (request: VerifyRequest): Effect.Effect<Option.Option<UserRow>> => {
      const aud = config.jwt.aud
      if (request._tag === "Hash") {
        const columns: ReadonlyArray<TokenColumn> = request.type === "email_change"
          ? ["email_change_token_new", "email_change_token_current"]
          : request.type === "phone_change"
          ? ["phone_change_token"]
          : request.type === "recovery" || request.type === "magiclink"
          ? ["recovery_token"]
          : request.type === "email"
          ? ["confirmation_token", "recovery_token"]
          : ["confirmation_token"]
        return users.findByToken(columns, request.tokenHash)
      }
      const { recipient } = request
      switch (request.type) {
        case "email_change":
          return recipient._tag === "Email" ? users.findByEmailChange(aud, recipient.email) : Effect.succeedNone
        case "phone_change":
          return recipient._tag === "Phone" ? users.findByPhoneChange(aud, recipient.phone) : Effect.succeedNone
        default:
          return recipient._tag === "Email" ? users.findByEmail(aud, recipient.email) : users.findByPhone(aud, recipient.phone)
      }
    }

    /** Sets claims on the user's identity for `provider`, creating it when `create` and there is none. */
    const setIdentityClaims = (user: UserRow, provider: "email" | "phone", claims: Record<string, unknown>, at: Date, create: boolean) =>
      Effect.gen(function*() {
        const existing = (yield* identities.forUser(user.id)).find((identity) => identity.provider === provider)
        if (existing !== undefined) return yield* identities.updateData(existing.id, { ...existing.identity_data, ...claims }, at)
        if (!create) return
        yield* identities.insert({
          id: randomUUID(),
          provider_id: user.id,
          user_id: user.id,
          identity_data: { sub: user.id, email_verified: false, phone_verified: false, ...claims },
          provider,
          now: at
        })
      })

    const withProvider = (user: UserRow, provider: "email" | "phone"): Record<string, unknown> => {
      const app = user.raw_app_meta_data ?? {}
      const providers = Array.isArray(app["providers"]) ? (app["providers"] as ReadonlyArray<unknown>) : []
      return providers.includes(provider)
        ? app
        : { ...app, provider: app["provider"] ?? provider, providers: [...providers, provider] }
    }

    const update = (user: UserRow, patch: UserPatch, at: Date, taken: AuthError) =>
      users.update(user.id, patch, at).pipe(Effect.catchTag("UniqueViolation", () => Effect.fail(taken)))

    /** What a matched token does (reference §2.9, §2.12); None is the first half of a double email change. */
    const apply = (user: UserRow, request: VerifyRequest, slot: Slot, at: Date) =>
      Effect.gen(function*() {
        const meta = user.raw_user_meta_data ?? {}
        const noConflict = AuthError.unexpected()
        if (slot.kind === "recovery") {
          // A recovery or magic link proves the address, so it confirms an unconfirmed one (as GoTrue's does).
          if (user.email_confirmed_at !== null) return Option.some(yield* update(user, { recovery_token: "" }, at, noConflict))
          yield* setIdentityClaims(user, "email", { email_verified: true }, at, false)
          return Option.some(yield* update(user, {
            recovery_token: "",
            email_confirmed_at: at,
            confirmation_token: "",
            raw_user_meta_data: { ...meta, email_verified: true }
          }, at, noConflict))
        }
        switch (request.type) {
          case "sms": {
            yield* setIdentityClaims(user, "phone", { phone_verified: true }, at, false)
            return Option.some(yield* update(user, {
              phone_confirmed_at: user.phone_confirmed_at ?? at,
              confirmation_token: "",
              raw_user_meta_data: { ...meta, phone_verified: true }
            }, at, noConflict))
          }
          case "email_change": {
            // Secure email change (reference §2.12): a user with an address confirms from both, in either order.
            // Without it (MAILER_SECURE_EMAIL_CHANGE_ENABLED=false) the new address's confirmation applies it alone.
            const firstOfTwo = config.mailer.secureEmailChangeEnabled && (user.email_change_confirm_status ?? 0) === 0 &&
              (user.email ?? "") !== ""
            if (firstOfTwo) {
              yield* update(user, { [slot.column]: "", email_change_confirm_status: 1 }, at, noConflict)
              return Option.none()
            }
            const email = user.email_change ?? ""
            yield* setIdentityClaims(user, "email", { email, email_verified: true }, at, true)
            return Option.some(yield* update(user, {
              email,
              email_confirmed_at: user.email_confirmed_at ?? at,
              email_change: "",
              email_change_token_new: "",
              email_change_token_current: "",
              email_change_confirm_status: 0,
              is_anonymous: false,
              raw_user_meta_data: { ...meta, email, email_verified: true },
              raw_app_meta_data: withProvider(user, "email")
            }, at, AuthError.of(422, "email_exists", "A user with this email address has already been registered")))
          }
          case "phone_change": {
            const phone = user.phone_change ?? ""
            yield* setIdentityClaims(user, "phone", { phone, phone_verified: true }, at, true)
            return Option.some(yield* update(user, {
              phone,
              phone_confirmed_at: at,
              phone_change: "",
              phone_change_token: "",
              is_anonymous: false,
              raw_user_meta_data: { ...meta, phone, phone_verified: true },
              raw_app_meta_data: withProvider(user, "phone")
            }, at, AuthError.of(422, "phone_exists", "A user with this phone number has already been registered")))
          }
          default: {
            yield* setIdentityClaims(user, "email", { email_verified: true }, at, false)
            return Option.some(yield* update(user, {
              email_confirmed_at: user.email_confirmed_at ?? at,
              confirmation_token: "",
              raw_user_meta_data: { ...meta, email_verified: true }
            }, at, noConflict))
          }
        }
      })

    /**
     * One verification, in one transaction on the locked user. A wrong code is counted and answered as a Left, so
     * the count commits with the refusal; the fifth wrong code clears the token itself.
     */
    const settle = <A>(
      found: UserRow,
      request: VerifyRequest,
      at: Date,
      finish: (user: UserRow, slot: Slot) => Effect.Effect<Either.Either<A, AuthError>>
    ) =>
      transactions.run(Effect.gen(function*() {
        const refused: Either.Either<A | EmailChangeAccepted, AuthError> = Either.left(otpExpired(request._tag))
        const locked = yield* users.lockById(found.id)
        if (Option.isNone(locked)) return refused
        const user = locked.value
        const slot = slotOf(user, request)
        if (Option.isNone(slot)) return refused
        const { kind, recipient, sentAt, stored, validity } = slot.value
        const phoneType = request.type === "sms" || request.type === "phone_change"
        const testCode = request._tag === "Code" && phoneType ? config.sms.testOtp.get(recipient) : undefined
        const byTestCode = testCode !== undefined && request._tag === "Code" && request.token === testCode
        if (!byTestCode) {
          const matched = request._tag === "Code"
            ? matchesCode(stored, recipient, request.token)
            : sameSecret(stored, request.tokenHash)
          if (!matched) {
            // A link's hash names no user when it is wrong; only a code aimed at a known address can be counted.
            // An `email` code could have been either emailed token, so it counts against both: otherwise it would
            // be a way to guess a recovery code past the limit.
            if (request._tag === "Code") {
              const aimedAt = request.type === "email"
                ? [slot.value, ...Option.toArray(slotOf(user, { ...request, type: "recovery" }))]
                : [slot.value]
              for (const target of aimedAt) {
                if (target.stored === null || target.stored === "") continue
                const failures = yield* attempts.recordMiss(user.id, target.kind, target.stored, at)
                if (isExhausted(failures)) yield* users.update(user.id, invalidation(target), at).pipe(Effect.orDie)
              }
            }
            return refused
          }
          if (isOtpExpired(sentAt, validity, at)) return refused
        }
        // As GoTrue does, a ban is told only to someone who holds a valid token.
        if (isBanned(user, at)) return Either.left(AuthError.of(403, "user_banned", "User is banned"))
        yield* attempts.clear(user.id, kind)
        const applied = yield* apply(user, request, slot.value, at)
        if (Option.isNone(applied)) return Either.right(new EmailChangeAccepted({ msg: FIRST_HALF_MESSAGE, code: "200" }))
        const event = verifiedEvent(slot.value, request.type)
        yield* audit.record(event.action, { actor: applied.value, traits: event.traits })
        return yield* finish(applied.value, slot.value)
      })).pipe(Effect.catchTag("SqlError", Effect.die), Effect.flatten)

    const verifyRequest = <A>(
      request: VerifyRequest,
      finish: (user: UserRow, slot: Slot, at: Date) => Effect.Effect<Either.Either<A, AuthError>>
    ): Effect.Effect<A | EmailChangeAccepted, AuthError> =>
      Effect.gen(function*() {
        const at = yield* now
        const found = yield* candidate(request)
        if (Option.isNone(found)) return yield* otpExpired(request._tag)
        return yield* settle(found.value, request, at, (user, slot) => finish(user, slot, at))
      })

    const startSession = (user: UserRow, _slot: Slot, at: Date): Effect.Effect<Either.Either<Session, AuthError>> =>
      Effect.map(tokens.issue(user, "otp", at), Either.right)

    /** A PKCE link starts no session: it hands out the code of the user's latest flow for this kind of mail. */
    const handOutCode = (type: VerifyType) => (user: UserRow, slot: Slot): Effect.Effect<Either.Either<AuthCode, AuthError>> =>
      Effect.map(
        flows.latestFor(user.id, flowMethod(type, slot)),
        Option.match({
          onNone: () => Either.left(AuthError.of(404, "flow_state_not_found", "No valid flow state found for user.")),
          onSome: (flow) => Either.right({ authCode: flow.auth_code })
        })
      )

    const verify = Effect.fn("Verify.verify")(function*(body: VerifyBody): Effect.fn.Return<Session | EmailChangeAccepted, AuthError> {
      return yield* verifyRequest(yield* validateVerifyBody(body), startSession)
    })

    /** GET /verify: where to send the browser, always. The token is a link's token hash. */
    const verifyLink = Effect.fn("Verify.verifyLink")(function*(query: LinkQuery): Effect.fn.Return<string> {
      const target = chooseRedirect(query.redirectTo, config.siteUrl, allowList)
      const type = query.type ?? ""
      const token = query.token ?? ""
      const request: Either.Either<VerifyRequest, AuthError> = type === ""
        ? Either.left(AuthError.validation("Verify requires a verification type"))
        : token === ""
        ? Either.left(AuthError.validation("Verify requires a token or a token hash"))
        : isVerifyType(type) && LINK_TYPES.includes(type)
        ? Either.right({ _tag: "Hash", type, tokenHash: token })
        : Either.left(unsupportedType())
      // GoTrue's mark of a PKCE flow is the stored token's prefix, which the link carries.
      if (isPkceToken(token)) {
        return yield* Effect.flatMap(request, (valid) => verifyRequest(valid, handOutCode(valid.type))).pipe(
          Effect.match({
            onFailure: (error) => pkceErrorRedirect(target, error),
            onSuccess: (result) =>
              result instanceof EmailChangeAccepted ? pkceMessageRedirect(target, result.msg) : codeRedirect(target, result.authCode)
          })
        )
      }
      return yield* Effect.flatMap(request, (valid) => verifyRequest(valid, startSession)).pipe(
        Effect.match({
          onFailure: (error) => errorRedirect(target, error),
          onSuccess: (result) =>
            result instanceof EmailChangeAccepted ? messageRedirect(target, result.msg) : sessionRedirect(target, result, type)
        })
      )
    })

    return { verify, verifyLink } as const
  }),
  dependencies: [FlowStateRepo.Default, UsersRepo.Default, IdentitiesRepo.Default, OtpAttemptsRepo.Default, AccessTokens.Default, AuditLog.Default, Transactions.Live]
}) {}
