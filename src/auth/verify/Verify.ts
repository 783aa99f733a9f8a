import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { AuthMetrics, countTagged } from "../metrics/AuthMetrics.js"
import { AuthConfig } from "../../config/AuthConfig.js"
import { compileAllowList } from "../../domain/RedirectAllowList.js"
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
import { sameSecret } from "../domain/OtpToken.js"
import { CODE_COLUMN_OF } from "../domain/SentCodeState.js"
import { EMAIL_CHANGE_FLOW, isPkceToken } from "../domain/Pkce.js"
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
import { OtpAttemptsRepo } from "../users/OtpAttemptsRepo.js"
import { PendingTokens } from "../users/PendingTokens.js"
import { PendingTokensRepo } from "../users/PendingTokensRepo.js"
import { UsersRepo } from "../users/UsersRepo.js"
import { codeSlot, invalidation, isFirstOfTwo, linkSlot, matchesCode, type Slot } from "./TokenSlot.js"
import { VerifiedChanges } from "./VerifiedChanges.js"
import { EmailChangeAccepted } from "./VerifyApi.js"
import { traced } from "../../platform/Traced.js"

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
    const config = yield* AuthConfig
    const transactions = yield* Transactions
    const users = yield* UsersRepo
    const attempts = yield* OtpAttemptsRepo
    const flows = yield* FlowStateRepo
    const tokens = yield* AccessTokens
    const audit = yield* AuditLog
    const pending = yield* PendingTokensRepo
    const bookkeeping = yield* PendingTokens
    const changes = yield* VerifiedChanges
    const lifetimes = { mail: config.mailer.otpExp, text: config.sms.otpExp }
    const allowList = compileAllowList(config.uriAllowList)
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

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
          ? codeSlot(lifetimes, user, request)
          : Option.flatMap(hash, (match) => linkSlot(lifetimes, user, match.kind))
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
              ? [target.value, ...Option.toArray(codeSlot(lifetimes, user, { ...request, type: "recovery" }))]
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
        const completed = !isFirstOfTwo(user, request, config.mailer.secureEmailChangeEnabled)
        const spent = spentByVerification(request.type, kind, completed)
        yield* attempts.clear(user.id, spent)
        const applied = yield* changes.clearSpent(yield* changes.apply(user, request, target.value, at), spent, at)
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

    const verify = traced("Verify.verify")(function*(
      body: VerifyBody,
      guess: Effect.Effect<void, AuthError>
    ): Effect.fn.Return<Session | EmailChangeAccepted, AuthError> {
      return yield* verifyRequest(yield* validateVerifyBody(body), guess, startSession).pipe(Effect.tap(countSignIn))
    })

    /** GET /verify: where to send the browser, always. The token is a link's token hash. */
    const verifyLink = traced("Verify.verifyLink")(function*(query: LinkQuery, guess: Effect.Effect<void, AuthError>): Effect.fn.Return<string> {
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

    /** Where a link with this redirect_to takes the browser, whatever its token: redirect_to if allowed, else SITE_URL. */
    const redirectTarget = (redirectTo: string | undefined): string => chooseRedirect(redirectTo, config.siteUrl, allowList)

    return { verify, verifyLink, redirectTarget } as const
  }),
  dependencies: [
    FlowStateRepo.Default,
    UsersRepo.Default,
    OtpAttemptsRepo.Default,
    PendingTokensRepo.Default,
    PendingTokens.Default,
    VerifiedChanges.Default,
    AccessTokens.Default,
    AuditLog.Default,
    Transactions.Live
  ]
}) {}
