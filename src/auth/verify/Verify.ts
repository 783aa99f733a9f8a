import { Clock, Duration, Effect, Either, Option } from "effect"
import { AuthMetrics, countTagged } from "../metrics/AuthMetrics.js"
import { AppConfig } from "../../config/AppConfig.js"
import { compileAllowList } from "../../domain/RedirectAllowList.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import type { Session } from "../contract/Session.js"
import { AuthError } from "../domain/AuthError.js"
import {
  acceptsLegacyLink,
  isLiveLink,
  kindsOfType,
  legacyLinksPossible,
  linkDigest,
  spentByVerification,
  type TokenKind
} from "../domain/LinkToken.js"
import { matchesOtp, sameSecret } from "../domain/OtpToken.js"
import { CODE_COLUMN_OF } from "../domain/SentCodeState.js"
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
import { AccountReclaim } from "../users/AccountReclaim.js"
import { OtpAttemptsRepo } from "../users/OtpAttemptsRepo.js"
import { PendingTokens } from "../users/PendingTokens.js"
import { type PendingTokenRow, PendingTokensRepo } from "../users/PendingTokensRepo.js"
import { type SentAtColumn, type TokenColumn, type UserPatch, UsersRepo } from "../users/UsersRepo.js"
import { EmailChangeAccepted } from "./VerifyApi.js"

/** One of a user's pending tokens: where it is stored, whom it was sent to, and how long it lasts. */
interface Slot {
  readonly kind: TokenKind
  readonly column: TokenColumn
  readonly stored: string | null
  readonly recipient: string
  readonly sentAt: Date | null
  readonly validity: Duration.Duration
}

const SENT_AT_OF: Readonly<Record<TokenKind, SentAtColumn>> = {
  confirmation: "confirmation_sent_at",
  recovery: "recovery_sent_at",
  email_change_new: "email_change_sent_at",
  email_change_current: "email_change_sent_at",
  phone_change: "phone_change_sent_at"
}

/** How a token_hash (or a link's token) named a user's pending token. */
interface HashMatch {
  readonly userId: string
  readonly kind: TokenKind
  /** The digest of a Gatehouse link token; None for GoTrue's form of a link, the code's hash itself. */
  readonly linkDigest: Option.Option<string>
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
    const random = yield* SecureRandom
    const config = yield* AppConfig
    const transactions = yield* Transactions
    const users = yield* UsersRepo
    const identities = yield* IdentitiesRepo
    const attempts = yield* OtpAttemptsRepo
    const flows = yield* FlowStateRepo
    const tokens = yield* AccessTokens
    const audit = yield* AuditLog
    const pending = yield* PendingTokensRepo
    const bookkeeping = yield* PendingTokens
    const reclaim = yield* AccountReclaim
    const allowList = compileAllowList(config.uriAllowList)
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    const slot = (user: UserRow, kind: TokenKind, recipient: string, texted: boolean): Slot => ({
      kind,
      column: CODE_COLUMN_OF[kind],
      stored: user[CODE_COLUMN_OF[kind]],
      recipient,
      sentAt: user[SENT_AT_OF[kind]],
      validity: texted ? config.sms.otpExp : config.mailer.otpExp
    })

    /**
     * The token a typed code is aimed at, from the address it comes with. An `email` code is whichever emailed token
     * its hash matches, else the confirmation (so it is counted); a code must fit the kind of user (an email type
     * needs an email user, texted codes a phone).
     */
    const codeSlot = (user: UserRow, request: Extract<VerifyRequest, { _tag: "Code" }>): Option.Option<Slot> => {
      const email = request.recipient._tag === "Email" ? request.recipient.email : undefined
      const phone = request.recipient._tag === "Phone" ? request.recipient.phone : undefined
      const hasEmail = (user.email ?? "") !== ""
      switch (request.type) {
        // An invitation's code is stored where a sign-up's is (GoTrue's signupVerify serves both).
        case "signup":
        case "invite":
          return email !== undefined && hasEmail ? Option.some(slot(user, "confirmation", user.email!, false)) : Option.none()
        case "recovery":
        case "magiclink":
          return email !== undefined && hasEmail ? Option.some(slot(user, "recovery", user.email!, false)) : Option.none()
        case "email":
          if (email === undefined || !hasEmail) return Option.none()
          return Option.some(slot(user, matchesCode(user.recovery_token, user.email!, request.token) ? "recovery" : "confirmation", user.email!, false))
        case "sms":
          return phone !== undefined && (user.phone ?? "") !== "" ? Option.some(slot(user, "confirmation", user.phone!, true)) : Option.none()
        case "email_change":
          return email === undefined
            ? Option.none()
            : email === lower(user.email_change)
            ? Option.some(slot(user, "email_change_new", user.email_change ?? "", false))
            : email === lower(user.email)
            ? Option.some(slot(user, "email_change_current", user.email ?? "", false))
            : Option.none()
        case "phone_change":
          return phone !== undefined ? Option.some(slot(user, "phone_change", user.phone_change ?? "", true)) : Option.none()
      }
    }

    /** The token a link names: links are mailed, so the address it went to must still be there. */
    const linkSlot = (user: UserRow, kind: TokenKind): Option.Option<Slot> => {
      switch (kind) {
        case "confirmation":
        case "recovery":
          return (user.email ?? "") !== "" ? Option.some(slot(user, kind, user.email!, false)) : Option.none()
        case "email_change_new":
          return (user.email_change ?? "") !== "" ? Option.some(slot(user, kind, user.email_change!, false)) : Option.none()
        case "email_change_current":
          return (user.email_change ?? "") !== "" ? Option.some(slot(user, kind, user.email ?? "", false)) : Option.none()
        case "phone_change":
          return (user.phone_change ?? "") !== "" ? Option.some(slot(user, kind, user.phone_change!, true)) : Option.none()
      }
    }

    /**
     * Whose pending token a token_hash names. A Gatehouse link token is found by its digest and costs nothing: it
     * cannot be guessed. Anything else could be a guess, so it is charged to the client first; it is then taken as
     * GoTrue's form of a link (the code's hash) only while a token GoTrue mailed could still be valid.
     */
    const matchHash = (request: Extract<VerifyRequest, { _tag: "Hash" }>, guess: Effect.Effect<void, AuthError>, at: Date) =>
      Effect.gen(function*() {
        const kinds = kindsOfType(request.type)
        const digest = linkDigest(request.tokenHash)
        const row = yield* pending.findByLink(digest)
        if (Option.isSome(row) && kinds.includes(row.value.token_kind)) {
          return Option.some<HashMatch>({ userId: row.value.user_id, kind: row.value.token_kind, linkDigest: Option.some(digest) })
        }
        yield* guess
        if (!legacyLinksPossible(yield* pending.linkTokensSince, config.mailer.otpExp, at)) return Option.none<HashMatch>()
        const user = yield* users.findByToken(kinds.map((kind) => CODE_COLUMN_OF[kind]), request.tokenHash)
        if (Option.isNone(user)) return Option.none<HashMatch>()
        const kind = kinds.find((candidate) => sameSecret(user.value[CODE_COLUMN_OF[candidate]], request.tokenHash))
        return kind === undefined ? Option.none<HashMatch>() : Option.some<HashMatch>({ userId: user.value.id, kind, linkDigest: Option.none() })
      })

    /** Whether the locked user's token in `target` is the one `match` named, and is still live. */
    const linkMatches = (user: UserRow, target: Slot, match: HashMatch, tokenHash: string) =>
      Effect.gen(function*() {
        const row = yield* pending.find(user.id, match.kind)
        const issuedWith = Option.map(row, (r) => r.code_hash)
        if (Option.isSome(match.linkDigest)) {
          return Option.isSome(row) && row.value.link_digest === match.linkDigest.value && isLiveLink(target.stored, row.value.code_hash)
        }
        return sameSecret(target.stored, tokenHash) && acceptsLegacyLink({
          sentAt: target.sentAt,
          issuedByGatehouse: Option.isSome(issuedWith) && issuedWith.value === target.stored,
          linkTokensSince: yield* pending.linkTokensSince
        })
      })

    const candidate = (request: Extract<VerifyRequest, { _tag: "Code" }>): Effect.Effect<Option.Option<UserRow>> => {
      const aud = config.jwt.aud
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
          id: yield* random.uuid(),
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

    /**
     * A confirmation of an address that was signed up more than once while unconfirmed: it activates only what its
     * own sign-up brought (that password, or none for a confirmation no sign-up sent, and that sign-up's data), and
     * every other password, identity, session and pending token of the account goes (AccountReclaim).
     */
    const reclaimed = (user: UserRow, channel: "email" | "phone", claim: PendingTokenRow, at: Date) =>
      Effect.gen(function*() {
        const address = channel === "email" ? { email: user.email! } : { phone: user.phone! }
        const verified = { email_verified: channel === "email", phone_verified: channel === "phone" }
        const own = (yield* identities.forUser(user.id)).find((identity) => identity.provider === channel)
        const identityData = { sub: user.id, ...address, ...verified }
        const keep = own?.id ?? (yield* random.uuid())
        if (own === undefined) {
          yield* identities.insert({ id: keep, provider_id: user.id, user_id: user.id, identity_data: identityData, provider: channel, now: at })
        } else {
          yield* identities.updateData(own.id, identityData, at)
        }
        const app = user.raw_app_meta_data ?? {}
        return yield* reclaim.reclaim(user, keep, {
          encrypted_password: claim.signup_password ?? "",
          raw_user_meta_data: { ...(claim.signup_data ?? {}), ...identityData },
          raw_app_meta_data: { ...app, provider: channel, providers: [channel] },
          is_anonymous: false,
          ...(channel === "email"
            ? { email_confirmed_at: at, phone: null, phone_confirmed_at: null }
            : { phone_confirmed_at: at, email: null, email_confirmed_at: null })
        }, at)
      })

    /** The live confirmation's claim, when confirming it must reclaim the account (see reclaimed). */
    const contestedClaim = (user: UserRow, target: Slot) =>
      Effect.map(
        pending.find(user.id, "confirmation"),
        Option.filter((row) =>
          row.reclaim && isLiveLink(target.stored, row.code_hash) && user.email_confirmed_at === null && user.phone_confirmed_at === null
        )
      )

    /**
     * Secure email change (reference §2.12): a user with an address confirms from both, in either order, and the
     * first confirmation only waits for the second. Without it (MAILER_SECURE_EMAIL_CHANGE_ENABLED=false) the new
     * address's confirmation applies the change alone.
     */
    const isFirstOfTwo = (user: UserRow, request: VerifyRequest): boolean =>
      request.type === "email_change" && config.mailer.secureEmailChangeEnabled && (user.email_change_confirm_status ?? 0) === 0 &&
      (user.email ?? "") !== ""

    /** What a matched token does (reference §2.9, §2.12); answers the user it leaves. */
    const apply = (user: UserRow, request: VerifyRequest, slot: Slot, at: Date): Effect.Effect<UserRow, AuthError> =>
      Effect.gen(function*() {
        const meta = user.raw_user_meta_data ?? {}
        const noConflict = AuthError.unexpected()
        if (slot.kind === "recovery") {
          // A recovery or magic link proves the address, so it confirms an unconfirmed one (as GoTrue's does).
          if (user.email_confirmed_at !== null) return yield* update(user, { recovery_token: "" }, at, noConflict)
          yield* setIdentityClaims(user, "email", { email_verified: true }, at, false)
          return yield* update(user, {
            recovery_token: "",
            email_confirmed_at: at,
            confirmation_token: "",
            raw_user_meta_data: { ...meta, email_verified: true }
          }, at, noConflict)
        }
        if (slot.kind === "confirmation") {
          const claim = yield* contestedClaim(user, slot)
          if (Option.isSome(claim)) return yield* reclaimed(user, request.type === "sms" ? "phone" : "email", claim.value, at)
        }
        switch (request.type) {
          case "sms": {
            yield* setIdentityClaims(user, "phone", { phone_verified: true }, at, false)
            return yield* update(user, {
              phone_confirmed_at: user.phone_confirmed_at ?? at,
              confirmation_token: "",
              raw_user_meta_data: { ...meta, phone_verified: true }
            }, at, noConflict)
          }
          case "email_change": {
            if (isFirstOfTwo(user, request)) {
              return yield* update(user, { [slot.column]: "", email_change_confirm_status: 1 }, at, noConflict)
            }
            const email = user.email_change ?? ""
            yield* setIdentityClaims(user, "email", { email, email_verified: true }, at, true)
            return yield* update(user, {
              email,
              email_confirmed_at: user.email_confirmed_at ?? at,
              email_change: "",
              email_change_token_new: "",
              email_change_token_current: "",
              email_change_confirm_status: 0,
              is_anonymous: false,
              raw_user_meta_data: { ...meta, email, email_verified: true },
              raw_app_meta_data: withProvider(user, "email")
            }, at, AuthError.of(422, "email_exists", "A user with this email address has already been registered"))
          }
          case "phone_change": {
            const phone = user.phone_change ?? ""
            yield* setIdentityClaims(user, "phone", { phone, phone_verified: true }, at, true)
            return yield* update(user, {
              phone,
              phone_confirmed_at: at,
              phone_change: "",
              phone_change_token: "",
              is_anonymous: false,
              raw_user_meta_data: { ...meta, phone, phone_verified: true },
              raw_app_meta_data: withProvider(user, "phone")
            }, at, AuthError.of(422, "phone_exists", "A user with this phone number has already been registered"))
          }
          default: {
            yield* setIdentityClaims(user, "email", { email_verified: true }, at, false)
            return yield* update(user, {
              email_confirmed_at: user.email_confirmed_at ?? at,
              confirmation_token: "",
              raw_user_meta_data: { ...meta, email_verified: true }
            }, at, noConflict)
          }
        }
      })

    /**
     * Empties what `apply` left of the tokens a verification spent (spentByVerification): the other of the two
     * emailed codes an `email` code may name.
     */
    const clearSpent = (user: UserRow, spent: ReadonlyArray<TokenKind>, at: Date): Effect.Effect<UserRow> => {
      const left = spent.map((kind) => CODE_COLUMN_OF[kind]).filter((column) => (user[column] ?? "") !== "")
      return left.length === 0
        ? Effect.succeed(user)
        : users.update(user.id, Object.fromEntries(left.map((column) => [column, ""])) as UserPatch, at).pipe(Effect.orDie)
    }

    /**
     * One verification, in one transaction on the locked user. A wrong code is counted and answered as a Left, so
     * the count commits with the refusal; the fifth wrong code clears the token itself. A wrong link names no user,
     * so it is counted only against its client (see matchHash).
     */
    const settle = <A>(
      userId: string,
      request: VerifyRequest,
      hash: Option.Option<HashMatch>,
      at: Date,
      finish: (user: UserRow, slot: Slot) => Effect.Effect<Either.Either<A, AuthError>>
    ) =>
      transactions.run(Effect.gen(function*() {
        const refused: Either.Either<A | EmailChangeAccepted, AuthError> = Either.left(otpExpired(request._tag))
        const locked = yield* users.lockById(userId)
        if (Option.isNone(locked)) return refused
        const user = locked.value
        const target = request._tag === "Code"
          ? codeSlot(user, request)
          : Option.flatMap(hash, (match) => linkSlot(user, match.kind))
        if (Option.isNone(target)) return refused
        const { kind, recipient, sentAt, stored, validity } = target.value
        const phoneType = request.type === "sms" || request.type === "phone_change"
        const testCode = request._tag === "Code" && phoneType ? config.sms.testOtp.get(recipient) : undefined
        const byTestCode = testCode !== undefined && request._tag === "Code" && request.token === testCode
        if (!byTestCode) {
          if (request._tag === "Code" && !matchesCode(stored, recipient, request.token)) {
            // An `email` code could have been either emailed token, so it counts against both: otherwise it would
            // be a way to guess a recovery code past the limit.
            const aimedAt = request.type === "email"
              ? [target.value, ...Option.toArray(codeSlot(user, { ...request, type: "recovery" }))]
              : [target.value]
            for (const aimed of aimedAt) {
              if (aimed.stored === null || aimed.stored === "") continue
              const failures = yield* attempts.recordMiss(user.id, aimed.kind, aimed.stored, at)
              if (isExhausted(failures)) yield* bookkeeping.forgetCleared(yield* users.update(user.id, invalidation(aimed), at).pipe(Effect.orDie))
            }
            return refused
          }
          if (request._tag === "Hash" && !(yield* linkMatches(user, target.value, Option.getOrThrow(hash), request.tokenHash))) return refused
          if (isOtpExpired(sentAt, validity, at)) return refused
        }
        // As GoTrue does, a ban is told only to someone who holds a valid token.
        if (isBanned(user, at)) return Either.left(AuthError.of(403, "user_banned", "User is banned"))
        const completed = !isFirstOfTwo(user, request)
        const spent = spentByVerification(request.type, kind, completed)
        yield* attempts.clear(user.id, spent)
        const applied = yield* clearSpent(yield* apply(user, request, target.value, at), spent, at)
        yield* bookkeeping.forgetCleared(applied)
        if (!completed) return Either.right(new EmailChangeAccepted({ msg: FIRST_HALF_MESSAGE, code: "200" }))
        const event = verifiedEvent(target.value, request.type)
        yield* audit.record(event.action, { actor: applied, traits: event.traits })
        return yield* finish(applied, target.value)
      })).pipe(Effect.catchTag("SqlError", Effect.die), Effect.flatten)

    /**
     * `guess` is what a guessable attempt (a typed code, or a token_hash that is no Gatehouse link token) costs the
     * client: RateLimits.chargeGuess over HTTP.
     */
    const verifyRequest = <A>(
      request: VerifyRequest,
      guess: Effect.Effect<void, AuthError>,
      finish: (user: UserRow, slot: Slot, at: Date) => Effect.Effect<Either.Either<A, AuthError>>
    ): Effect.Effect<A | EmailChangeAccepted, AuthError> =>
      Effect.gen(function*() {
        const at = yield* now
        if (request._tag === "Code") {
          yield* guess
          const found = yield* candidate(request)
          if (Option.isNone(found)) return yield* otpExpired(request._tag)
          return yield* settle(found.value.id, request, Option.none(), at, (user, slot) => finish(user, slot, at))
        }
        const match = yield* matchHash(request, guess, at)
        if (Option.isNone(match)) return yield* otpExpired(request._tag)
        return yield* settle(match.value.userId, request, match, at, (user, slot) => finish(user, slot, at))
      })

    const startSession = (user: UserRow, _slot: Slot, at: Date): Effect.Effect<Either.Either<Session, AuthError>> =>
      Effect.map(tokens.issue(user, "otp", at), Either.right)

    /**
     * A session /verify started is a sign-in (grant_type `verify` in the sign-in metric), counted once its
     * transaction has committed. A PKCE link's is counted where its code is exchanged, at /token.
     */
    const countSignIn = <A>(result: A | EmailChangeAccepted) =>
      result instanceof EmailChangeAccepted ? Effect.void : countTagged(AuthMetrics.signIns, "grant_type", "verify")

    /** A PKCE link starts no session: it hands out the code of the user's latest flow for this kind of mail. */
    const handOutCode = (type: VerifyType) => (user: UserRow, slot: Slot): Effect.Effect<Either.Either<AuthCode, AuthError>> =>
      Effect.map(
        flows.latestFor(user.id, flowMethod(type, slot)),
        Option.match({
          onNone: () => Either.left(AuthError.of(404, "flow_state_not_found", "No valid flow state found for user.")),
          onSome: (flow) => Either.right({ authCode: flow.auth_code })
        })
      )

    const verify = Effect.fn("Verify.verify")(function*(
      body: VerifyBody,
      guess: Effect.Effect<void, AuthError>
    ): Effect.fn.Return<Session | EmailChangeAccepted, AuthError> {
      return yield* verifyRequest(yield* validateVerifyBody(body), guess, startSession).pipe(Effect.tap(countSignIn))
    })

    /** GET /verify: where to send the browser, always. The token is a link's token hash. */
    const verifyLink = Effect.fn("Verify.verifyLink")(function*(query: LinkQuery, guess: Effect.Effect<void, AuthError>): Effect.fn.Return<string> {
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
        return yield* Effect.flatMap(request, (valid) => verifyRequest(valid, guess, handOutCode(valid.type))).pipe(
          Effect.match({
            onFailure: (error) => pkceErrorRedirect(target, error),
            onSuccess: (result) =>
              result instanceof EmailChangeAccepted ? pkceMessageRedirect(target, result.msg) : codeRedirect(target, result.authCode)
          })
        )
      }
      return yield* Effect.flatMap(request, (valid) => verifyRequest(valid, guess, startSession)).pipe(
        Effect.tap(countSignIn),
        Effect.match({
          onFailure: (error) => errorRedirect(target, error),
          onSuccess: (result) =>
            result instanceof EmailChangeAccepted ? messageRedirect(target, result.msg) : sessionRedirect(target, result, type)
        })
      )
    })

    return { verify, verifyLink } as const
  }),
  dependencies: [
    FlowStateRepo.Default,
    UsersRepo.Default,
    IdentitiesRepo.Default,
    OtpAttemptsRepo.Default,
    PendingTokensRepo.Default,
    PendingTokens.Default,
    AccountReclaim.Default,
    AccessTokens.Default,
    AuditLog.Default,
    Transactions.Live
  ]
}) {}
