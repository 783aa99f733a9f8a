import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { IamConfig } from "../../config/IamConfig.js"
import { otpAuthUri } from "../../domain/OtpAuthUri.js"
import { TOTP_SECRET_BYTES, totpSecret } from "../../domain/Totp.js"
import { sweepEvery } from "../../platform/process/SweepEvery.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import type { Account } from "../accounts/Accounts.js"
import { IamError } from "../domain/IamError.js"
import {
  type CodeLimits, type CodeVerdict, failuresAfterWrong, judgeCode, TICKET_BYTES, ticketDigest, ticketExhausted, ticketOf,
  ticketState
} from "../domain/TwoStepRules.js"
import { catchSql } from "../IamSql.js"
import { type TotpFactorRow, TwoStepRepo } from "../store/TwoStepRepo.js"
import { traced } from "../../platform/Traced.js"

/** A TOTP enrolment's answer: the only time the secret leaves the service. */
export interface TotpEnrollment {
  readonly secret: string
  readonly uri: string
}

/** What Login answers instead of tokens for an account with an active factor. */
export interface SecondStepTicket {
  readonly ticket: string
  readonly expiresAt: Date
}

/** How often an instance deletes expired tickets; none of them can be redeemed, so this is only housekeeping. */
const SWEEP_EVERY = Duration.minutes(1)

const INVALID_CODE = "invalid TOTP code"

const locked = (retryAfterMs: number): IamError =>
  IamError.exhausted(`too many wrong TOTP codes: try again in ${Math.max(1, Math.ceil(retryAfterMs / 1000))}s`, retryAfterMs)

/**
 * Two-step verification of IAM accounts with TOTP (docs/iam.md): enrolment by the account itself, the second step of
 * Login (a single-use ticket, then a code), and removal. Every code is judged by domain/TwoStepRules with the factor's
 * row locked, in one transaction with what the judgement writes: a code is accepted once, a failure always counts.
 * The secret is never logged and never answered again after EnrollTotp.
 */
export class TwoStep extends Context.Tag("iam/TwoStep")<TwoStep, {
  /** A new pending factor for the account. ALREADY_EXISTS while an active one exists. */
  readonly enroll: (account: Account) => Effect.Effect<TotpEnrollment, IamError>
  /** Activates the pending factor with a code from it. FAILED_PRECONDITION without one; INVALID_ARGUMENT for a wrong code. */
  readonly confirm: (userId: number, code: string) => Effect.Effect<void, IamError>
  /**
   * Removes the account's factor (pending or active) and its waiting tickets. With `code` (the account acting on
   * itself) the code must be accepted first; without (an administrator), it is not asked. NOT_FOUND without a factor.
   */
  readonly remove: (userId: number, code: Option.Option<string>) => Effect.Effect<void, IamError>
  /** For a password sign-in that succeeded: a ticket when the account has an active factor, else None. */
  readonly ticketFor: (userId: number) => Effect.Effect<Option.Option<SecondStepTicket>, IamError>
  /**
   * Redeems a ticket with a code: the account's id once accepted (the ticket is then spent). UNAUTHENTICATED for an
   * unknown, spent or expired ticket and for a wrong code (a ticket dies after its attempts); RESOURCE_EXHAUSTED while
   * the factor is locked.
   */
  readonly redeem: (ticket: string, code: string) => Effect.Effect<number, IamError>
}>() {
  static readonly layer: Layer.Layer<TwoStep, never, TwoStepRepo | Transactions | SecureRandom | IamConfig> = Layer.scoped(
    TwoStep,
    Effect.gen(function*() {
      const repo = yield* TwoStepRepo
      const transactions = yield* Transactions
      const random = yield* SecureRandom
      const iam = yield* IamConfig
      const settings = iam.loginTicket
      const limits: CodeLimits = { maxFailures: settings.maxFailures, failureWindow: settings.failureWindow }
      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

      yield* sweepEvery(SWEEP_EVERY, "the IAM login tickets", Effect.flatMap(now, repo.sweepTickets))

      /** Judges a code with the factor locked, and writes the verdict (inside the caller's transaction). */
      const judge = (factor: TotpFactorRow, code: string, at: Date, activate: boolean) =>
        Effect.gen(function*() {
          const verdict: CodeVerdict = judgeCode(factor, code, at, limits)
          if (verdict._tag === "Accepted") yield* repo.accept(factor.userId, verdict.step, activate ? at : undefined)
          if (verdict._tag === "Wrong") {
            const failures = failuresAfterWrong(factor.failures, limits.failureWindow, at)
            yield* repo.recordFailures(factor.userId, failures.count, failures.since ?? at)
          }
          return verdict
        })

      /** A verdict other than Accepted as the caller's error; the write it made has committed by then. */
      const refusal = (verdict: Exclude<CodeVerdict, { _tag: "Accepted" }>, wrong: IamError): IamError =>
        verdict._tag === "Locked" ? locked(verdict.retryAfterMs) : wrong

      const enroll = traced("TwoStep.enroll")(function*(account: Account) {
        const secret = totpSecret(yield* random.bytes(TOTP_SECRET_BYTES))
        // The name an authenticator app lists the code under: the configured issuer and the username.
        const uri = otpAuthUri({ issuer: iam.issuer, account: account.username, secret })
        if (Option.isNone(uri)) return yield* IamError.internal()
        if (!(yield* repo.putPending(account.id, secret, yield* now))) {
          return yield* IamError.exists("two-step verification is already on: remove it first (RemoveTotp)")
        }
        return { secret, uri: uri.value } satisfies TotpEnrollment
      })

      const confirm = traced("TwoStep.confirm")(function*(userId: number, code: string) {
        const at = yield* now
        const outcome = yield* catchSql(transactions.run(Effect.gen(function*() {
          const factor = yield* repo.lockFactor(userId)
          if (factor === undefined) return { _tag: "NoFactor" } as const
          if (Option.isSome(factor.verifiedAt)) return { _tag: "Active" } as const
          return yield* judge(factor, code, at, true)
        })))
        if (outcome._tag === "NoFactor") return yield* IamError.precondition("no TOTP enrolment is pending: call EnrollTotp first")
        if (outcome._tag === "Active") return yield* IamError.precondition("two-step verification is already on")
        if (outcome._tag !== "Accepted") return yield* refusal(outcome, IamError.invalid(INVALID_CODE))
      })

      const remove = traced("TwoStep.remove")(function*(userId: number, code: Option.Option<string>) {
        const at = yield* now
        const outcome = yield* catchSql(transactions.run(Effect.gen(function*() {
          const factor = yield* repo.lockFactor(userId)
          if (factor === undefined) return { _tag: "NoFactor" } as const
          if (Option.isSome(code)) {
            const verdict = yield* judge(factor, code.value, at, false)
            if (verdict._tag !== "Accepted") return verdict
          }
          yield* repo.removeFactor(userId)
          return { _tag: "Removed" } as const
        })))
        if (outcome._tag === "NoFactor") return yield* IamError.notFound("two-step verification is not set up for this account")
        if (outcome._tag !== "Removed") return yield* refusal(outcome, IamError.invalid(INVALID_CODE))
      })

      const ticketFor = traced("TwoStep.ticketFor")(function*(userId: number) {
        const factor = yield* repo.findFactor(userId)
        if (factor === undefined || Option.isNone(factor.verifiedAt)) return Option.none<SecondStepTicket>()
        const ticket = ticketOf(yield* random.bytes(TICKET_BYTES))
        const expiresAt = new Date((yield* Clock.currentTimeMillis) + Duration.toMillis(settings.ttl))
        yield* repo.insertTicket(ticketDigest(ticket), userId, expiresAt)
        return Option.some({ ticket, expiresAt })
      })

      const redeem = traced("TwoStep.redeem")(function*(ticket: string, code: string) {
        const at = yield* now
        const digest = ticketDigest(ticket)
        const outcome = yield* catchSql(transactions.run(Effect.gen(function*() {
          const stored = yield* repo.lockTicket(digest)
          const state = ticketState(stored, at)
          if (state._tag === "Unknown") return { _tag: "BadTicket", message: "ticket is not valid" } as const
          if (state._tag === "Expired") {
            yield* repo.deleteTicket(digest)
            return { _tag: "BadTicket", message: "ticket has expired: sign in again" } as const
          }
          const factor = yield* repo.lockFactor(state.userId)
          if (factor === undefined || Option.isNone(factor.verifiedAt)) {
            yield* repo.deleteTicket(digest)
            return { _tag: "BadTicket", message: "ticket is not valid" } as const
          }
          const verdict = yield* judge(factor, code, at, false)
          if (verdict._tag === "Accepted") {
            yield* repo.deleteTicket(digest)
            return { _tag: "Redeemed", userId: state.userId } as const
          }
          if (verdict._tag === "Locked") return verdict
          if (ticketExhausted((stored?.failures ?? 0) + 1, settings.attempts)) {
            yield* repo.deleteTicket(digest)
            return { _tag: "BadTicket", message: "too many wrong codes: sign in again" } as const
          }
          yield* repo.countTicketFailure(digest)
          return verdict
        })))
        if (outcome._tag === "Redeemed") return outcome.userId
        if (outcome._tag === "BadTicket") return yield* IamError.unauthenticated(outcome.message)
        return yield* refusal(outcome, IamError.unauthenticated(INVALID_CODE))
      })

      return { enroll, confirm, remove, ticketFor, redeem }
    })
  )
}
