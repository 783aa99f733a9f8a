import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { AuthConfig } from "../../config/AuthConfig.js"
import { deleteUpToTask, type HousekeepingTask } from "../../platform/process/Housekeeping.js"
import { EndedSessionsRepo } from "./EndedSessionsRepo.js"
import { SessionSweepRepo } from "./SessionSweepRepo.js"

/** Sessions one statement deletes, or looks at, at most. */
export const SESSION_LIMIT = 1000

/**
 * How long past JWT_EXP the revocation feed keeps a row: every access token of a session was issued before it ended,
 * so JWT_EXP after the end none is valid any more; the margin covers clocks that disagree and a gateway that polls late.
 */
export const ENDED_SESSION_MARGIN = Duration.hours(1)

/** The revocation feed's rows (migration 0027) once no access token of their session can still be valid. */
export const endedSessionsTask = (repo: EndedSessionsRepo, jwtExpSeconds: number): HousekeepingTask => {
  const kept = Duration.sum(Duration.seconds(jwtExpSeconds), ENDED_SESSION_MARGIN)
  return deleteUpToTask("sessions/ended", Duration.minutes(10), SESSION_LIMIT, (now, limit) =>
    repo.deleteBefore(new Date(now.getTime() - Duration.toMillis(kept)), limit))
}

const NIL_UUID = "00000000-0000-0000-0000-000000000000"

/**
 * The sessions sweeps (plan §3.2):
 * - expired: not_after passed more than max(JWT_EXP, 24h) ago. Every exchange past not_after is refused, and every
 *   access token of the session has expired by then (GoTrue's cleanup waits 72h).
 * - dead: no GoTrue key, no unrevoked token, and quiet for JWT_EXP + 24h. No exchange can refresh it (a revoked token
 *   is reuse when no current token exists to be its child), and its access tokens have expired. Only GoTrue's own
 *   reuse handling leaves such sessions; Gatehouse's always hold an unrevoked token.
 */
export const sessionTasks = (repo: SessionSweepRepo, jwtExpSeconds: number): ReadonlyArray<HousekeepingTask> => {
  const jwtExp = Duration.seconds(jwtExpSeconds)
  const expiredKept = Duration.max(jwtExp, Duration.hours(24))
  const quietFor = Duration.sum(jwtExp, Duration.hours(24))
  return [
    {
      name: "sessions/expired",
      every: Duration.minutes(10),
      batch: (now) =>
        Effect.map(repo.deleteExpired(new Date(now.getTime() - Duration.toMillis(expiredKept)), SESSION_LIMIT), (deleted) => ({
          deleted,
          done: deleted < SESSION_LIMIT,
          resumeAfter: null
        }))
    },
    {
      name: "sessions/dead",
      every: Duration.hours(1),
      batch: (now, resumeAfter) =>
        Effect.map(
          repo.deleteDead(resumeAfter === null || resumeAfter === "" ? NIL_UUID : resumeAfter, new Date(now.getTime() - Duration.toMillis(quietFor)), SESSION_LIMIT),
          ({ deleted, last }) => ({ deleted, done: last === null, resumeAfter: last })
        )
    }
  ]
}

export class ExpiredSessions extends Effect.Service<ExpiredSessions>()("auth/ExpiredSessions", {
  effect: Effect.gen(function*() {
    const repo = yield* SessionSweepRepo
    const ended = yield* EndedSessionsRepo
    const config = yield* AuthConfig
    return { tasks: [...sessionTasks(repo, config.jwt.exp), endedSessionsTask(ended, config.jwt.exp)] }
  }),
  dependencies: [SessionSweepRepo.Default, EndedSessionsRepo.Default]
}) {}
