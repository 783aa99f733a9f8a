import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"
import { traced } from "../../platform/Traced.js"

/**
 * The OAuth server's columns of sessions (migration 0020, GoTrue's): the client a session was started for and the
 * scopes it was granted, both NULL for every other session.
 */
export class SessionGrantsRepo extends Effect.Service<SessionGrantsRepo>()("auth/SessionGrantsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* PlatformConfig
    const t = authTables(config.db.namespace)

    /** Marks a session as an OAuth client's, with the scopes it was granted. */
    const markSession = traced("SessionGrantsRepo.markSession")(function*(sessionId: string, clientId: string, scopes: string) {
      yield* sql`UPDATE ${sql(t.sessions)} SET oauth_client_id = ${clientId}, scopes = ${scopes} WHERE id = ${sessionId}`
    }, Effect.orDie)

    /** A session's OAuth client and scopes (both null for a session that is not an OAuth one); none for no session. */
    const sessionGrant = traced("SessionGrantsRepo.sessionGrant")(function*(sessionId: string) {
      const rows = yield* sql<{ readonly oauth_client_id: string | null; readonly scopes: string | null }>`
        SELECT oauth_client_id, scopes FROM ${sql(t.sessions)} WHERE id = ${sessionId}`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    return { markSession, sessionGrant } as const
  })
}) {}
