import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { PlatformConfig } from "../../config/PlatformConfig.js"
import { authTables } from "../AuthTables.js"

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
    const markSession = Effect.fn("OAuthServerRepo.markSession")(function*(sessionId: string, clientId: string, scopes: string) {
      yield* sql`UPDATE ${sql(t.sessions)} SET oauth_client_id = ${clientId}, scopes = ${scopes} WHERE id = ${sessionId}`
    }, Effect.orDie)

    /** A session's OAuth client and scopes (both null for a session that is not an OAuth one); none for no session. */
    const sessionGrant = Effect.fn("OAuthServerRepo.sessionGrant")(function*(sessionId: string) {
      const rows = yield* sql<{ readonly oauth_client_id: string | null; readonly scopes: string | null }>`
        SELECT oauth_client_id, scopes FROM ${sql(t.sessions)} WHERE id = ${sessionId}`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    /**
     * The session a refresh token belongs to, by the token's lookup key (refresh_tokens.token), with its OAuth
     * client: what the token endpoints check before an exchange. A session's client never changes, so reading it
     * before the exchange's own transaction decides the same as reading it inside.
     */
    const sessionOfToken = Effect.fn("OAuthServerRepo.sessionOfToken")(function*(lookupKey: string) {
      const rows = yield* sql<{ readonly session_id: string; readonly oauth_client_id: string | null; readonly scopes: string | null }>`
        SELECT s.id AS session_id, s.oauth_client_id, s.scopes FROM ${sql(t.refresh_tokens)} r
        JOIN ${sql(t.sessions)} s ON s.id = r.session_id
        WHERE r.token = ${lookupKey} LIMIT 1`
      return Option.fromNullable(rows[0])
    }, Effect.orDie)

    return { markSession, sessionGrant, sessionOfToken } as const
  })
}) {}
