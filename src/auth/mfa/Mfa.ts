import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AuthConfig } from "../../config/AuthConfig.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import type { CurrentUser } from "../contract/CurrentUser.js"
import type { Factor } from "../contract/Factor.js"
import type { Session } from "../contract/Session.js"
import { METHOD_OF_FACTOR } from "../domain/Assurance.js"
import { AuthError } from "../domain/AuthError.js"
import { verifyLockout } from "../../domain/CodeLockout.js"
import { challengeExpiresAt, isChallengeExpired } from "../domain/FactorChallenge.js"
import { enrolmentRefusal } from "../domain/FactorEnrolment.js"
import { FACTOR_TYPES, type FactorRow, type FactorType } from "../domain/FactorRow.js"
import { overRequestRate } from "../domain/OverRequestRate.js"
import { invalidPhoneMessage, normalizePhone } from "../domain/Phone.js"
import type { UserRow } from "../domain/UserRow.js"
import { type ChallengeBody, type FactorKind, FactorKinds } from "../factors/FactorKind.js"
import { FactorsRepo } from "../factors/FactorsRepo.js"
import { AccessTokens } from "../sessions/AccessTokens.js"
import { Sessions, type StartedSession } from "../sessions/Sessions.js"
import { SessionsRepo } from "../sessions/SessionsRepo.js"
import { type AuditActor, AuditLog } from "../users/AuditLog.js"
import { factorJson } from "../users/UserJson.js"
import { UsersRepo } from "../users/UsersRepo.js"
import { pathUser } from "../users/PathUser.js"
import { traced } from "../../platform/Traced.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const NIL_UUID = "00000000-0000-0000-0000-000000000000"

/** GoTrue's names of the types in its messages ("MFA enroll is disabled for TOTP"). */
const TYPE_NAME: Readonly<Record<FactorType, string>> = { totp: "TOTP", phone: "Phone", webauthn: "WebAuthn" }

export type Caller = Pick<CurrentUser["Type"], "user" | "sessionId" | "session" | "factors">

export interface EnrollRequest {
  readonly factorType: string
  readonly friendlyName: string
  readonly issuer: string
  readonly phone: string
}

export interface VerifyRequest {
  /** As sent; "" when absent. */
  readonly challengeId: string
  readonly code: string
  readonly webauthn: unknown
}

/** The enrolment answer: `{id, type, friendly_name}` and the type's own keys. */
export type Enrolled = Readonly<Record<string, unknown>>
/** The challenge answer: `{id, type, expires_at}` and the type's own keys. */
export type Challenged = Readonly<Record<string, unknown>>

export interface AdminFactorUpdate {
  readonly friendlyName: string
  readonly phone: string
}

const factorNotFound = AuthError.of(404, "mfa_factor_not_found", "Factor not found")
const challengeNotFound = AuthError.of(422, "mfa_factor_not_found", "MFA factor with the provided challenge ID not found")

type VerifyOutcome =
  | { readonly _tag: "Verified"; readonly started: StartedSession }
  | { readonly _tag: "Refused"; readonly error: AuthError }

const refused = (error: AuthError): VerifyOutcome => ({ _tag: "Refused", error })

/**
 * Second factors (reference §1): enrolment with GoTrue's validateFactors, challenges, verification that raises the
 * session to aal2, unenrolment, and the admin's factor routes. What differs by type is asked of the type's
 * FactorKind; a type with no kind registered answers as if its switches were off.
 *
 * Beyond GoTrue: failed verifications are counted per factor in the database (MFA_MAX_VERIFY_FAILURES within
 * MFA_VERIFY_FAILURE_WINDOW), and at the limit the factor refuses every code, before comparing it, until the window
 * ends; a success clears the count.
 */
export class Mfa extends Effect.Service<Mfa>()("auth/Mfa", {
  effect: Effect.gen(function*() {
    const config = yield* AuthConfig
    const transactions = yield* Transactions
    const repo = yield* FactorsRepo
    const users = yield* UsersRepo
    const sessions = yield* Sessions
    const sessionsRepo = yield* SessionsRepo
    const tokens = yield* AccessTokens
    const audit = yield* AuditLog
    const random = yield* SecureRandom
    const kinds = yield* FactorKinds
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
    const commit = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.orDie(transactions.run(effect))

    const enrollDisabled = (type: FactorType) =>
      AuthError.of(422, `mfa_${type}_enroll_not_enabled`, `MFA enroll is disabled for ${TYPE_NAME[type]}`)
    const verifyDisabled = (type: FactorType) =>
      AuthError.of(422, `mfa_${type}_verify_not_enabled`, `MFA verification is disabled for ${TYPE_NAME[type]}`)

    /** The kind of a type whose switch is on, else None (a type with no kind registered counts as switched off). */
    const kindOf = (type: FactorType, switch_: "enroll" | "verify"): Option.Option<FactorKind> =>
      config.mfa[type][switch_] ? Option.fromNullable(kinds.get(type)) : Option.none()

    /** GoTrue's requireNotAnonymous, on every /factors route. */
    const notAnonymous = (user: UserRow): Effect.Effect<void, AuthError> =>
      user.is_anonymous
        ? Effect.fail(AuthError.of(403, "no_authorization", "Anonymous user not allowed to perform these actions"))
        : Effect.void

    /** GoTrue's loadFactor for the caller: a malformed id, a missing factor and someone else's are all 404. */
    const load = traced("Mfa.load")(function*(caller: Caller, rawFactorId: string): Effect.fn.Return<FactorRow, AuthError> {
      yield* notAnonymous(caller.user)
      if (!UUID.test(rawFactorId)) return yield* AuthError.of(404, "validation_failed", "factor_id must be an UUID")
      const id = rawFactorId.toLowerCase()
      const factor = caller.factors.find((f) => f.id === id)
      if (factor === undefined) return yield* factorNotFound
      return factor
    })

    const enroll = traced("Mfa.enroll")(function*(caller: Caller, request: EnrollRequest): Effect.fn.Return<Enrolled, AuthError> {
      const { user } = caller
      yield* notAnonymous(user)
      if (caller.sessionId === undefined) {
        // GoTrue answers 500; a token without a session is the caller's, not a server fault.
        return yield* AuthError.of(403, "session_not_found", "A valid session and a registered user are required to enroll a factor")
      }
      const type = FACTOR_TYPES.find((t) => t === request.factorType)
      if (type === undefined) return yield* AuthError.validation("factor_type needs to be totp, phone, or webauthn")
      const kind = kindOf(type, "enroll")
      if (Option.isNone(kind)) return yield* enrollDisabled(type)
      const at = yield* now
      const base = { user, friendlyName: request.friendlyName, issuer: request.issuer, phone: request.phone, now: at }
      yield* kind.value.beforeEnroll({ ...base, factors: caller.factors })

      // GoTrue's validateFactors: drop every user's abandoned enrolments, then judge this user's factors as they are now.
      yield* repo.purgeAbandoned(new Date(at.getTime() - Duration.toMillis(config.mfa.factorExpiry)))
      const factors = yield* repo.forUser(user.id)
      const refusal = enrolmentRefusal(factors, request.friendlyName, config.mfa, caller.session?.aal)
      if (Option.isSome(refusal)) return yield* refusal.value

      const created = yield* kind.value.enroll({ ...base, factors })
      const id = yield* random.uuid()
      yield* commit(Effect.gen(function*() {
        yield* repo.insert({ id, userId: user.id, type, friendlyName: request.friendlyName, secret: created.secret, phone: created.phone, now: at })
        yield* audit.record("factor_in_progress", { actor: user, traits: { factor_id: id } })
      }))
      return { id, type, friendly_name: request.friendlyName, ...created.answer }
    })

    const challenge = traced("Mfa.challenge")(function*(
      caller: Caller,
      factor: FactorRow,
      body: ChallengeBody | null,
      ip: string
    ): Effect.fn.Return<Challenged, AuthError> {
      const kind = kindOf(factor.factor_type, "verify")
      if (Option.isNone(kind)) return yield* verifyDisabled(factor.factor_type)
      const at = yield* now
      const challengeId = yield* random.uuid()
      // The factor stays locked while its challenge is made, so two challenges of one phone factor cannot both pass
      // MFA_PHONE_MAX_FREQUENCY (a text that fails rolls everything back).
      const made = yield* transactions.run(Effect.gen(function*() {
        const locked = yield* repo.lockForUser(caller.user.id, factor.id)
        if (Option.isNone(locked)) return yield* factorNotFound
        const made = yield* kind.value.challenge({ user: caller.user, factor: locked.value, challengeId, body, now: at })
        yield* repo.insertChallenge({
          id: challengeId,
          factorId: factor.id,
          ip,
          now: at,
          otpCode: made.otpCode,
          webAuthnSessionData: made.webAuthnSessionData
        })
        yield* audit.record("challenge_created", { actor: caller.user, traits: { factor_id: factor.id, factor_status: locked.value.status } })
        return made
      })).pipe(Effect.catchTag("SqlError", Effect.die))
      const expiresAt = Math.floor(challengeExpiresAt(at, config.mfa.challengeExpiry).getTime() / 1000)
      return { id: challengeId, type: factor.factor_type, expires_at: expiresAt, ...made.answer }
    })

    const verify = traced("Mfa.verify")(function*(
      caller: Caller,
      factor: FactorRow,
      request: VerifyRequest,
      ip: string
    ): Effect.fn.Return<Session, AuthError> {
      const type = factor.factor_type
      // GoTrue parses challenge_id as a UUID with the body: a malformed one is a body that does not parse.
      if (request.challengeId !== "" && !UUID.test(request.challengeId)) {
        return yield* AuthError.of(400, "bad_json", "Could not parse request body as JSON: invalid UUID format")
      }
      const challengeId = request.challengeId === "" ? NIL_UUID : request.challengeId.toLowerCase()
      const registered = Option.fromNullable(kinds.get(type))
      if (Option.isSome(registered)) yield* registered.value.checkVerifyRequest(request)
      const kind = kindOf(type, "verify")
      if (Option.isNone(kind)) {
        // GoTrue's quirk: a switched-off WebAuthn verification answers with the enrolment's code.
        return yield* (type === "webauthn"
          ? AuthError.of(422, "mfa_webauthn_enroll_not_enabled", "MFA verification is disabled for WebAuthn")
          : verifyDisabled(type))
      }
      const sessionId = caller.sessionId
      if (sessionId === undefined) return yield* AuthError.of(403, "session_not_found", "A factor raises a session: this token names none")
      const at = yield* now
      const windowStart = new Date(at.getTime() - Duration.toMillis(config.mfa.verifyFailureWindow))

      // One transaction, the factor locked first so that concurrent verifications of it queue: a refusal that
      // writes (an expired challenge deleted, a failure counted) is an outcome, so that its writes commit.
      const outcome = yield* transactions.run(Effect.gen(function*(): Effect.fn.Return<VerifyOutcome, AuthError> {
        const locked = yield* repo.lockForUser(caller.user.id, factor.id)
        if (Option.isNone(locked)) return refused(factorNotFound)
        const found = yield* repo.lockChallenge(factor.id, challengeId)
        if (Option.isNone(found)) return refused(challengeNotFound)
        const challengeRow = found.value
        // GoTrue answers a spent challenge with the IP mismatch too: either way, this challenge is not the caller's to use.
        if (challengeRow.verified_at !== null || challengeRow.ip_address !== ip) {
          return refused(AuthError.of(422, "mfa_ip_address_mismatch", "Challenge and verify IP addresses mismatch."))
        }
        if (isChallengeExpired(challengeRow.created_at, config.mfa.challengeExpiry, at)) {
          yield* repo.removeChallenge(challengeRow.id)
          return refused(AuthError.of(422, "mfa_challenge_expired",
            `MFA challenge ${challengeRow.id} has expired, verify against another challenge or create a new challenge.`))
        }
        const lockout = verifyLockout(yield* repo.failures(factor.id, windowStart), config.mfa.maxVerifyFailures,
          config.mfa.verifyFailureWindow, at)
        if (Option.isSome(lockout)) return refused(overRequestRate(lockout.value))

        const verdict = yield* kind.value.verify({ ...request, user: caller.user, factor: locked.value, challenge: challengeRow, now: at })
        if (verdict._tag === "Rejected") {
          const failures = yield* repo.recordFailure(factor.id, at, windowStart)
          if (failures >= config.mfa.maxVerifyFailures && kind.value.deleteChallengeAtFailureLimit) {
            yield* repo.removeChallenge(challengeRow.id)
          }
          return refused(verdict.error)
        }

        yield* audit.record("verification_attempted", {
          actor: caller.user,
          traits: { challenge_id: challengeRow.id, factor_id: factor.id, factor_type: type }
        })
        if (kind.value.spentChallenge === "delete") yield* repo.removeChallenge(challengeRow.id)
        else yield* repo.markChallengeVerified(challengeRow.id, at)
        yield* repo.clearFailures(factor.id)
        if (locked.value.status === "verified") {
          if (verdict.update.lastWebAuthnChallengeData !== undefined) {
            yield* repo.noteWebAuthnChallenge(factor.id, verdict.update.lastWebAuthnChallengeData, at)
          }
          yield* repo.removeUnverifiedOfType(locked.value)
        } else {
          yield* repo.markVerified(locked.value, verdict.update, at)
        }
        const started = yield* sessions.stepUp(sessionId, { ...locked.value, status: "verified" }, at)
        // GoTrue's entry for the refresh token the step-up replaced.
        yield* audit.record("token_revoked", { actor: started.user })
        return { _tag: "Verified", started }
      })).pipe(Effect.catchTag("SqlError", Effect.die))
      if (outcome._tag === "Refused") return yield* outcome.error
      return yield* tokens.respond(outcome.started)
    })

    const unenroll = traced("Mfa.unenroll")(function*(
      caller: Caller,
      factor: FactorRow
    ): Effect.fn.Return<{ readonly id: string }, AuthError> {
      if (factor.status === "verified" && caller.session?.aal !== "aal2") {
        return yield* AuthError.of(422, "insufficient_aal", "AAL2 required to unenroll verified factor")
      }
      const at = yield* now
      yield* removeFactor(factor, at, "factor_unenrolled", { actor: caller.user, traits: { factor_id: factor.id, factor_status: factor.status } })
      return { id: factor.id }
    })

    /** Deletes a factor (its challenges go with it) and lowers the sessions it raised (reference §1.6). */
    const removeFactor = (
      factor: FactorRow,
      at: Date,
      action: "factor_unenrolled" | "factor_deleted",
      entry: { readonly actor: UserRow | AuditActor; readonly traits: Readonly<Record<string, unknown>> }
    ): Effect.Effect<FactorRow, AuthError> =>
      Effect.flatMap(
        commit(Effect.gen(function*() {
          const removed = yield* repo.remove(factor.id)
          if (Option.isNone(removed)) return Option.none<FactorRow>()
          yield* sessionsRepo.downgradeForFactor(factor.id, METHOD_OF_FACTOR[factor.factor_type], at)
          yield* audit.record(action, entry)
          return removed
        })),
        Option.match({ onNone: () => Effect.fail(factorNotFound), onSome: Effect.succeed })
      )

    /** GoTrue's loadUser, then loadFactor, for the admin routes. */
    const loadUser = (rawUserId: string) => pathUser(users, rawUserId)

    const loadUserFactor = (rawUserId: string, rawFactorId: string) =>
      Effect.gen(function*() {
        const user = yield* loadUser(rawUserId)
        if (!UUID.test(rawFactorId)) return yield* AuthError.of(404, "validation_failed", "factor_id must be an UUID")
        const factor = (yield* repo.forUser(user.id)).find((f) => f.id === rawFactorId.toLowerCase())
        if (factor === undefined) return yield* factorNotFound
        return { user, factor }
      })

    const adminList = traced("Mfa.adminList")(function*(rawUserId: string): Effect.fn.Return<ReadonlyArray<Factor>, AuthError> {
      const user = yield* loadUser(rawUserId)
      return (yield* repo.forUser(user.id)).map(factorJson)
    })

    const adminUpdate = traced("Mfa.adminUpdate")(function*(
      rawUserId: string,
      rawFactorId: string,
      request: AdminFactorUpdate,
      actor: AuditActor
    ): Effect.fn.Return<Factor, AuthError> {
      const { factor, user } = yield* loadUserFactor(rawUserId, rawFactorId)
      let phone: string | undefined
      // A new number is only read for a phone factor; GoTrue ignores it on the others.
      if (request.phone !== "" && factor.factor_type === "phone") {
        const digits = normalizePhone(request.phone)
        if (Option.isNone(digits)) return yield* AuthError.validation(invalidPhoneMessage)
        phone = digits.value
      }
      const at = yield* now
      const updated = yield* commit(Effect.gen(function*() {
        const row = yield* repo.update(factor.id, {
          ...(request.friendlyName !== "" ? { friendlyName: request.friendlyName } : {}),
          ...(phone !== undefined ? { phone } : {})
        }, at)
        yield* audit.record("factor_updated", { actor, traits: { user_id: user.id, factor_id: factor.id, factor_type: factor.factor_type } })
        return row
      }))
      return yield* Option.match(updated, { onNone: () => Effect.fail(factorNotFound), onSome: (row) => Effect.succeed(factorJson(row)) })
    })

    const adminDelete = traced("Mfa.adminDelete")(function*(
      rawUserId: string,
      rawFactorId: string,
      actor: AuditActor
    ): Effect.fn.Return<Factor, AuthError> {
      const { factor, user } = yield* loadUserFactor(rawUserId, rawFactorId)
      const at = yield* now
      const removed = yield* removeFactor(factor, at, "factor_deleted", {
        actor,
        traits: { user_id: user.id, factor_id: factor.id, factor_type: factor.factor_type }
      })
      return factorJson(removed)
    })

    return { load, enroll, challenge, verify, unenroll, adminList, adminUpdate, adminDelete } as const
  }),
  dependencies: [FactorsRepo.Default, UsersRepo.Default, Transactions.Live]
}) {}
