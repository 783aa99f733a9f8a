import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { AuthConfig } from "../../config/AuthConfig.js"
import type { HousekeepingTask } from "../../platform/process/Housekeeping.js"
import { OneTimeRowSweepRepo } from "./OneTimeRowSweepRepo.js"

/** Rows of each table one statement deletes at most. */
export const ONE_TIME_LIMIT = 1000

/**
 * Used or expired one-time rows (plan §3.2): one_time_tokens (GoTrue's mirror of the pending codes), pending_tokens
 * (Gatehouse's links and sign-up data, stored password hashes among them) and otp_attempts (failure counts), once the
 * longest code lifetime (MAILER_OTP_EXP, SMS_OTP_EXP) and a day more have passed: verification refuses them as
 * expired by then, GoTrue too.
 */
export const oneTimeRowTasks = (repo: OneTimeRowSweepRepo, kept: Duration.Duration): ReadonlyArray<HousekeepingTask> => [{
  name: "one_time_rows",
  every: Duration.minutes(10),
  batch: (now) =>
    Effect.map(repo.sweep(new Date(now.getTime() - Duration.toMillis(kept)), ONE_TIME_LIMIT), (swept) => ({
      deleted: swept.oneTimeTokens + swept.pendingTokens + swept.otpAttempts,
      done: swept.oneTimeTokens < ONE_TIME_LIMIT && swept.pendingTokens < ONE_TIME_LIMIT && swept.otpAttempts < ONE_TIME_LIMIT,
      resumeAfter: null
    }))
}]

export class ExpiredOneTimeRows extends Effect.Service<ExpiredOneTimeRows>()("auth/ExpiredOneTimeRows", {
  effect: Effect.gen(function*() {
    const repo = yield* OneTimeRowSweepRepo
    const config = yield* AuthConfig
    const kept = Duration.sum(Duration.max(config.mailer.otpExp, config.sms.otpExp), Duration.hours(24))
    return { tasks: oneTimeRowTasks(repo, kept) }
  }),
  dependencies: [OneTimeRowSweepRepo.Default]
}) {}
