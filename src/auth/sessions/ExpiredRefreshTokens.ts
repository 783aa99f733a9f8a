import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { AuthConfig } from "../../config/AuthConfig.js"
import type { HousekeepingTask, SweepBatch } from "../../platform/process/Housekeeping.js"
import { isSignedFormRow, refreshTokenKey } from "./RefreshTokenCodec.js"
import { RefreshTokenSweepRepo } from "./RefreshTokenSweepRepo.js"

export interface RefreshTokenMargins {
  /**
   * How long a revoked row is kept at least. Reuse detection needs none of them (Sessions recognises a swept token by
   * its signature, plan §3.1, and the parent of the current token is never swept); the margin only keeps the rows of
   * the last minutes for whoever is looking at an incident.
   */
  readonly revokedKept: Duration.Duration
  /** How long a row of no session is kept after its last change (GoTrue's cleanup keeps revoked rows a day). */
  readonly orphansKept: Duration.Duration
}

export const REFRESH_TOKEN_MARGINS: RefreshTokenMargins = { revokedKept: Duration.minutes(10), orphansKept: Duration.hours(24) }

/** Ids one batch walks: a range of the primary key, read through it (checked: 5,000 ids in about 18 ms). */
export const ID_WINDOW = 5000n
/**
 * Revoked rows one batch deletes at most. Measured on a 200k-row backlog (PostgreSQL 15): 4,000 deletions in one
 * batch took up to half a second; a full window goes on from its last row instead.
 */
export const REVOKED_LIMIT = 1000
/** Orphan rows one statement deletes at most. */
export const ORPHAN_LIMIT = 1000

/**
 * How often a pass over the revoked rows begins. A pass walks every id of the table whatever it finds (about 18 ms of
 * PostgreSQL per 5,000 ids): at 5,000,000 rows about 18 s of database time, which once a minute was a fifth of a core
 * spent for ever on a big table (the size run's refresh grant and admin reads grew with it). Every ten minutes it is
 * about 3 %; a revoked row waits at most a pass longer for its sweep, and it is garbage either way (reuse detection
 * recognises a swept token by its signature). An unfinished pass still goes on at every run, so a backlog is not slower.
 */
export const REVOKED_PASS_EVERY = Duration.minutes(10)

/**
 * The refresh_tokens sweeps (plan §3.2): rows of no session, and revoked signed-form rows that are the parent of no
 * unrevoked one. Revoked rows are found by walking the ids in windows from a saved position, so a pass over a table of
 * any size is many short statements; a row is deleted only when its digest is of the token Gatehouse derived for it,
 * the proof Sessions reads again from the token when it is presented after the sweep.
 */
export const refreshTokenTasks = (
  repo: RefreshTokenSweepRepo,
  key: Buffer,
  margins: RefreshTokenMargins = REFRESH_TOKEN_MARGINS
): ReadonlyArray<HousekeepingTask> => [
  {
    name: "refresh_tokens/orphans",
    every: Duration.hours(1),
    batch: (now) =>
      Effect.map(repo.deleteOrphans(new Date(now.getTime() - Duration.toMillis(margins.orphansKept)), ORPHAN_LIMIT), (deleted): SweepBatch => ({
        deleted,
        done: deleted < ORPHAN_LIMIT,
        resumeAfter: null
      }))
  },
  {
    name: "refresh_tokens/revoked",
    every: REVOKED_PASS_EVERY,
    batch: (now, resumeAfter) =>
      Effect.gen(function*() {
        const after = resumeAfter === null || resumeAfter === "" ? 0n : BigInt(resumeAfter)
        const upTo = after + ID_WINDOW
        const found = yield* repo.candidates(after, upTo, new Date(now.getTime() - Duration.toMillis(margins.revokedKept)), REVOKED_LIMIT)
        const deleted = yield* repo.deleteRevoked(found.filter((row) => isSignedFormRow(key, row)).map((row) => row.id))
        // A full batch ends the window early: the next goes on after its last row.
        if (found.length === REVOKED_LIMIT) return { deleted, done: false, resumeAfter: found[found.length - 1]!.id }
        const done = upTo >= (yield* repo.maxId())
        return { deleted, done, resumeAfter: done ? null : upTo.toString() }
      })
  }
]

/** The refresh_tokens tasks for this server's key. */
export class ExpiredRefreshTokens extends Effect.Service<ExpiredRefreshTokens>()("auth/ExpiredRefreshTokens", {
  effect: Effect.gen(function*() {
    const repo = yield* RefreshTokenSweepRepo
    const config = yield* AuthConfig
    return { tasks: refreshTokenTasks(repo, refreshTokenKey(Redacted.value(config.jwt.secret))) }
  }),
  dependencies: [RefreshTokenSweepRepo.Default]
}) {}
