import { Effect, Option } from "effect"
import { AuthError } from "../domain/AuthError.js"
import { parseSignedRefreshToken } from "../domain/GoTrueSignedRefreshToken.js"
import { isWellFormedRefreshToken, refreshTokenLookupKey } from "./RefreshTokenCodec.js"
import { SessionGrantsRepo } from "./SessionGrantsRepo.js"

/** A session's OAuth grant: its client (null: not an OAuth session) and scopes. */
export interface SessionGrant {
  readonly clientId: string | null
  readonly scopes: string | null
}

/**
 * Which OAuth client a refresh token's session belongs to, for the two token endpoints: /oauth/token refreshes an
 * OAuth session only for its own client, and /token refreshes none (GoTrue's rules). A session's client never
 * changes, so reading it before the exchange decides what reading it inside would.
 */
export class OAuthSessions extends Effect.Service<OAuthSessions>()("auth/OAuthSessions", {
  effect: Effect.gen(function*() {
    const repo = yield* SessionGrantsRepo

    /** The grant of the session holding the token (a Gatehouse or GoTrue row, or a GoTrue signed token's session). */
    const grantOfToken = Effect.fn("OAuthSessions.grantOfToken")(function*(refreshToken: string) {
      // Nothing to look up for what no server could have issued (the exchange refuses it on its own).
      if (!isWellFormedRefreshToken(refreshToken)) return Option.none<SessionGrant>()
      const byRow = yield* repo.sessionOfToken(refreshTokenLookupKey(refreshToken))
      if (Option.isSome(byRow)) return Option.some<SessionGrant>({ clientId: byRow.value.oauth_client_id, scopes: byRow.value.scopes })
      const signed = parseSignedRefreshToken(refreshToken)
      if (signed === undefined) return Option.none<SessionGrant>()
      const bySession = yield* repo.sessionGrant(signed.sessionId)
      return Option.map(bySession, (row): SessionGrant => ({ clientId: row.oauth_client_id, scopes: row.scopes }))
    })

    /** POST /token?grant_type=refresh_token: a session an OAuth client holds is refreshed at /oauth/token only. */
    const refuseOAuthSession = Effect.fn("OAuthSessions.refuseOAuthSession")(function*(refreshToken: string) {
      const grant = yield* grantOfToken(refreshToken)
      if (Option.isSome(grant) && grant.value.clientId !== null) {
        return yield* AuthError.oauth("invalid_client", "Client authentication required for OAuth session")
      }
    })

    return { grantOfToken, refuseOAuthSession } as const
  }),
  dependencies: [SessionGrantsRepo.Default]
}) {}
