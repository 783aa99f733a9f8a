import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { Transactions } from "../../platform/sql/Transactions.js"
import type { SessionInfo } from "../contract/SessionInfo.js"
import { AuthError } from "../domain/AuthError.js"
import type { UserRow } from "../domain/UserRow.js"
import { RefreshTokensRepo } from "./RefreshTokensRepo.js"
import { Sessions } from "./Sessions.js"
import type { SessionSummary } from "./SessionsRepo.js"
import { type AuditActor, AuditLog, subjectTraits } from "../users/AuditLog.js"
import { pathUser } from "../users/PathUser.js"
import { UsersRepo } from "../users/UsersRepo.js"
import { UUID_PATTERN } from "../domain/ClientCredentials.js"
import { traced } from "../../platform/Traced.js"

const iso = (date: Date | null): string | null => (date === null ? null : date.toISOString())

/** A session row as a list shows it; `current` only in the user's own list, where the caller's session is known. */
export const sessionInfo = (row: SessionSummary, current?: string | undefined): SessionInfo => ({
  id: row.id,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
  refreshed_at: iso(row.refreshed_at),
  user_agent: row.user_agent,
  ip: row.ip,
  aal: row.aal,
  not_after: iso(row.not_after),
  ...(current === undefined ? {} : { current: row.id === current })
})

const noSuchSession = () => AuthError.of(404, "session_not_found", "Session not found")

/**
 * The sessions a user can see and end (Gatehouse's own, beside GoTrue's logout scopes), and the admin's view of a
 * user's. Ending one is a logout of that session alone: its refresh tokens go with its row (ON DELETE CASCADE), and
 * its access tokens stop at this server at once (the bearer check finds no session), as after /logout.
 */
export class UserSessions extends Effect.Service<UserSessions>()("auth/UserSessions", {
  effect: Effect.gen(function*() {
    const sessions = yield* Sessions
    const users = yield* UsersRepo
    const tokens = yield* RefreshTokensRepo
    const audit = yield* AuditLog
    const transactions = yield* Transactions
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    const own = traced("UserSessions.own")(function*(userId: string, current: string | undefined) {
      const rows = yield* sessions.list(userId, yield* now)
      return { sessions: rows.map((row) => sessionInfo(row, current ?? "")) }
    })

    /** Ends one of the user's sessions other than `current` (which ends with /logout). */
    const endOwn = traced("UserSessions.endOwn")(function*(
      user: UserRow,
      current: string | undefined,
      sessionId: string
    ): Effect.fn.Return<void, AuthError> {
      if (!UUID_PATTERN.test(sessionId)) return yield* noSuchSession()
      const id = sessionId.toLowerCase()
      if (id === current) return yield* AuthError.validation("The current session ends with POST /logout, not here")
      const ended = yield* transactions.run(Effect.gen(function*() {
        const found = yield* sessions.end(user.id, id)
        if (found) yield* audit.record("logout", { actor: user, traits: { scope: "session", session_id: id } })
        return found
      })).pipe(Effect.orDie)
      if (!ended) return yield* noSuchSession()
    })

    const ofUser = traced("UserSessions.ofUser")(function*(rawUserId: string): Effect.fn.Return<{ readonly sessions: ReadonlyArray<SessionInfo> }, AuthError> {
      const user = yield* pathUser(users, rawUserId)
      const rows = yield* sessions.list(user.id, yield* now)
      return { sessions: rows.map((row) => sessionInfo(row)) }
    })

    /**
     * Ends every session of the user's, and the refresh tokens that have none (a GoTrue database's oldest rows):
     * nothing the user held before goes on working.
     */
    const endAllOfUser = traced("UserSessions.endAllOfUser")(function*(rawUserId: string, actor: AuditActor): Effect.fn.Return<void, AuthError> {
      const user = yield* pathUser(users, rawUserId)
      yield* transactions.run(Effect.gen(function*() {
        const count = yield* sessions.endAll(user.id)
        yield* tokens.removeForUser(user.id)
        yield* audit.record("logout", { actor, traits: { ...subjectTraits(user), scope: "admin", sessions_ended: count } })
      })).pipe(Effect.orDie)
    })

    /** A user's sessions as the rows say, for a page that renders them itself (the admin console). */
    const summaries = (userId: string, at: Date) => sessions.list(userId, at)

    return { own, endOwn, ofUser, summaries, endAllOfUser } as const
  }),
  dependencies: [Sessions.Default, AuditLog.Default, UsersRepo.Default, RefreshTokensRepo.Default, Transactions.Live]
}) {}
