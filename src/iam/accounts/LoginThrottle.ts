import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { IamConfig, type IamLoginThrottle } from "../../config/IamConfig.js"
import { requestRate } from "../../domain/RequestRate.js"
import { IamError } from "../domain/IamError.js"
import type { LoginBackoff } from "../domain/LoginBackoff.js"
import { LoginThrottleRepo } from "../store/LoginThrottleRepo.js"
import { sweepEvery } from "../../platform/process/SweepEvery.js"
import { traced } from "../../platform/Traced.js"

/** One sign-in attempt: the client it came from (undefined: none known, not counted) and the account it names. */
export interface LoginAttempt {
  readonly client: string | undefined
  readonly account: string
}

/** How often an instance deletes the records that no longer change a decision, and the margin it leaves (skew). */
const SWEEP_EVERY = Duration.minutes(1)

export const backoffOf = (settings: IamLoginThrottle): LoginBackoff => ({
  after: settings.backoffAfter,
  firstMs: Duration.toMillis(settings.backoff),
  maxMs: Duration.toMillis(settings.backoffMax),
  forgetAfterMs: Duration.toMillis(settings.forgetAfter)
})

const tooMany = (retryAfterMs: number): IamError =>
  IamError.exhausted(`too many failed logins: try again in ${Math.max(1, Math.ceil(retryAfterMs / 1000))}s`, retryAfterMs)

/**
 * IAM Login's throttle, shared by every instance through the database: per account a backoff after failures in a
 * row (domain/LoginBackoff), per client a bucket of failures (domain/RequestRate). An attempt is admitted before
 * its password is checked and counted as a failure of both at once, so guesses sent together cannot all find the
 * door open; a success then takes the count back.
 */
export class LoginThrottle extends Context.Tag("iam/LoginThrottle")<LoginThrottle, {
  /**
   * RESOURCE_EXHAUSTED, with the wait as its retry hint, while the client's bucket is empty or the account must
   * wait, whatever the password; otherwise the attempt counts as a failure until `succeeded`.
   */
  readonly admit: (attempt: LoginAttempt) => Effect.Effect<void, IamError>
  /** The attempt's password was right: the account's failures are forgotten and the client's bucket refunded. */
  readonly succeeded: (attempt: LoginAttempt) => Effect.Effect<void, IamError>
}>() {
  static readonly layer: Layer.Layer<LoginThrottle, never, LoginThrottleRepo | IamConfig> = Layer.scoped(
    LoginThrottle,
    Effect.gen(function*() {
      const repo = yield* LoginThrottleRepo
      const iam = yield* IamConfig
      const backoff = backoffOf(iam.loginThrottle)
      const { burst, events, per } = iam.loginThrottle.clientFailures
      const rate = requestRate(events, per, burst)

      // A swept record changes no decision, so sweeping is only housekeeping; the margin keeps a record another
      // instance, whose clock runs behind, still counts on.
      const sweep = Effect.flatMap(Clock.currentTimeMillis, (now) => repo.sweep(now - Duration.toMillis(SWEEP_EVERY), backoff))
      yield* sweepEvery(SWEEP_EVERY, "the IAM login throttle", sweep)

      const admit = traced("LoginThrottle.admit")(function*(attempt: LoginAttempt) {
        const now = yield* Clock.currentTimeMillis
        if (attempt.client !== undefined) {
          const client = yield* repo.admitClient(attempt.client, now, rate)
          if (!client.allowed) return yield* tooMany(client.retryAfterMs)
        }
        const account = yield* repo.admitAccount(attempt.account, now, backoff)
        if (!account.allowed) {
          // Refused before any password was checked: not a failure of the client's either.
          if (attempt.client !== undefined) yield* repo.refundClient(attempt.client, rate)
          return yield* tooMany(account.retryAfterMs)
        }
      })

      const succeeded = traced("LoginThrottle.succeeded")(function*(attempt: LoginAttempt) {
        yield* repo.clearAccount(attempt.account)
        if (attempt.client !== undefined) yield* repo.refundClient(attempt.client, rate)
      })

      return { admit, succeeded }
    })
  )
}
