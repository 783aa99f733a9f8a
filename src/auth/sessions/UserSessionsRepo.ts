import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"

/** One of a user's sessions, as the admin console lists them: what the sessions table says, nothing secret. */
export interface UserSessionListing {
  readonly id: string
  readonly created_at: Date | null
  readonly refreshed_at: Date | null
  readonly not_after: Date | null
  readonly user_agent: string | null
  readonly ip: string | null
  readonly aal: string | null
}

/** The most a listing shows: a user with more sessions than this is one to end them for, not to read them. */
export const SESSION_LISTING_LIMIT = 200

/** A user's sessions, newest first, for the admin console (the sessions floor's other reads are per session). */
export class UserSessionsRepo extends Effect.Service<UserSessionsRepo>()("auth/UserSessionsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = authTables((yield* PlatformConfig).db.namespace)

    const forUser = Effect.fn("UserSessionsRepo.forUser")(function*(userId: string) {
      return yield* sql<UserSessionListing>`
        SELECT id::text AS id, created_at, refreshed_at, not_after, user_agent, host(ip) AS ip, aal
        FROM ${sql(t.sessions)}
        WHERE user_id = ${userId}
        ORDER BY created_at DESC NULLS LAST, id
        LIMIT ${SESSION_LISTING_LIMIT}`
    }, Effect.orDie)

    return { forUser } as const
  })
}) {}
