import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { AuthError } from "../domain/AuthError.js"
import { encodeCursor, nextPosition, parseFeedLimit, parseFeedStart } from "../domain/RevocationFeed.js"
import { EndedSessionsRepo } from "../sessions/EndedSessionsRepo.js"
import { AdminRevokedSessionsApi } from "./AdminRevokedSessionsApi.js"

/** GET /admin/revoked-sessions: a page of the revocation feed and the cursor of the next. */
export const RevokedSessionsHttpLive = HttpApiBuilder.group(AdminRevokedSessionsApi, "adminRevokedSessions", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* EndedSessionsRepo
    return handlers.handle("revokedSessions", ({ urlParams }) =>
      Effect.gen(function*() {
        const start = yield* Either.mapLeft(parseFeedStart(urlParams.since), AuthError.validation)
        const limit = yield* Either.mapLeft(parseFeedLimit(urlParams.limit), AuthError.validation)
        const { horizon, rows } = yield* repo.page(start, limit)
        const { more, next } = nextPosition(start, rows, limit, horizon)
        return {
          sessions: rows.map((row) => ({ session_id: row.sessionId, user_id: row.userId, ended_at: row.endedAt.toISOString() })),
          next: encodeCursor(next),
          has_more: more
        }
      }))
  }))
