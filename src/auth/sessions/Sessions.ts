import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { AuthConfig } from "../../config/AuthConfig.js"
import { CurrentClient } from "../../platform/http/CurrentClient.js"
import { SecureRandom } from "../../platform/SecureRandom.js"
import { Transactions } from "../../platform/sql/Transactions.js"
import { AuthError } from "../domain/AuthError.js"
import { METHOD_OF_FACTOR } from "../domain/Assurance.js"
import type { FactorRow } from "../domain/FactorRow.js"
import { type IdentityRow, isBanned, type UserRow } from "../domain/UserRow.js"
import { AuditLog } from "../users/AuditLog.js"
import {
  encodeSignedRefreshToken,
  hasSignedTokenShape,
  isSignedWith,
  parseSignedRefreshToken,
  signingKeyOf
} from "../domain/GoTrueSignedRefreshToken.js"
import { decideRefresh, decideSignedRefresh, exchangeDetour, lastRefreshedAt, type RotationPolicy } from "../domain/RefreshRules.js"
import {
  deriveRefreshToken,
  digestRefreshToken,
  isDigestRow,
  isGoTrueLegacyToken,
  isWellFormedRefreshToken,
  refreshTokenKey,
  refreshTokenLookupKey,
  sessionSigningKey,
  tokenOfRow
} from "./RefreshTokenCodec.js"
import { type CurrentToken, RefreshTokensRepo } from "./RefreshTokensRepo.js"
import { type AmrEntry, SessionsRepo, type UserWithRelations } from "./SessionsRepo.js"
import { AuthMetrics } from "../metrics/AuthMetrics.js"
import { traced } from "../../platform/Traced.js"

/** amr methods (GoTrue's names) a session can be started or extended with. */
export type AuthMethod =
  | "password"
  | "anonymous"
  | "otp"
  | "magiclink"
  | "email/signup"
  | "recovery"
  | "email_change"
  | "oauth"
  | "passkey"
  | "web3"
  | "oauth_provider/authorization_code"
  | "sso/saml"

export interface StartedSession {
  readonly sessionId: string
  readonly refreshToken: string
  /** The user as the session left it (last_sign_in_at set). */
  readonly user: UserRow
  /** The user's identities, oldest first, for the response. */
  readonly identities: ReadonlyArray<IdentityRow>
  /** The user's factors, oldest first, for the response (auth-js reads the next level from them). */
  readonly factors: ReadonlyArray<FactorRow>
  /** The session's amr claims, most recent first, for the access token. */
  readonly amr: ReadonlyArray<AmrEntry>
  /** An OAuth client's session (the OAuth server's): its access tokens also carry the client and the granted scopes. */
  readonly oauth?: { readonly client_id: string; readonly scope: string }
}

export type RefreshedSession = StartedSession

/** The most sessions a list answers, newest first: past that, older ones are not shown (they still work). */
export const SESSIONS_LISTED = 100

export const LOGOUT_SCOPES = ["global", "local", "others"] as const
export type LogoutScope = (typeof LOGOUT_SCOPES)[number]

const notFound = AuthError.of(400, "refresh_token_not_found", "Invalid Refresh Token: Refresh Token Not Found")
const alreadyUsed = AuthError.of(400, "refresh_token_already_used", "Invalid Refresh Token: Already Used")
const userBanned = AuthError.of(400, "user_banned", "Invalid Refresh Token: User Banned")
const sessionExpired = AuthError.of(400, "session_expired", "Invalid Refresh Token: Session Expired")
const notIssuedHere = AuthError.of(400, "validation_failed", "Invalid Refresh Token: Not Issued By This Server")

/**
 * What every exchange refuses of the token's user, whichever kind of token it was: a user gone is an unknown token,
 * a banned one is refused as such.
 */
const refusalOfUser = (found: Option.Option<UserWithRelations>, now: Date): AuthError | undefined =>
  Option.isNone(found) ? notFound : isBanned(found.value.user, now) ? userBanned : undefined

/**
 * GoTrue's rule tying a session to the OAuth client it was started for: only that client refreshes it, at
 * /oauth/token (`caller` is the client that authenticated there; undefined at /token), and no client refreshes any
 * other session. Checked on the locked session, after the user and expiry checks, as GoTrue orders them.
 */
const clientRefusal = (sessionClient: string | null, caller: string | undefined): AuthError | undefined =>
  sessionClient !== null
    ? caller === undefined
      ? AuthError.oauth("invalid_client", "Client authentication required for OAuth session")
      : caller !== sessionClient
      ? AuthError.oauth("invalid_client", "Client does not match the session's OAuth client")
      : undefined
    : caller !== undefined
    ? AuthError.oauth("invalid_client", "Client authentication not allowed for non-OAuth session")
    : undefined

/** The OAuth claims of a session's tokens, from its row (none for a session that is not an OAuth client's). */
const oauthOf = (clientId: string | null, scopes: string | null): Pick<RefreshedSession, "oauth"> =>
  clientId === null ? {} : { oauth: { client_id: clientId, scope: scopes ?? "" } }

/** Past the session's not_after, every exchange is refused. */
const isPastNotAfter = (notAfter: Date | null, now: Date): boolean => notAfter !== null && notAfter.getTime() <= now.getTime()

/**
 * Sessions and their refresh tokens (spec §3). Each token exchange runs in one transaction holding row locks on
 * the token's session and on the presented token, so requests or instances racing on one token queue on those
 * locks: exactly one rotates it, and the others find it revoked and, within the reuse interval, receive the same
 * child.
 */
export class Sessions extends Effect.Service<Sessions>()("auth/Sessions", {
  effect: Effect.gen(function*() {
    const random = yield* SecureRandom
    const config = yield* AuthConfig
    const sessionsRepo = yield* SessionsRepo
    const tokens = yield* RefreshTokensRepo
    const transactions = yield* Transactions
    const audit = yield* AuditLog
    const client = yield* CurrentClient
    const key = refreshTokenKey(Redacted.value(config.jwt.secret))
    const policy: RotationPolicy = {
      rotationEnabled: config.security.refreshTokenRotationEnabled,
      reuseIntervalMillis: Duration.toMillis(config.security.refreshTokenReuseInterval)
    }

    const insertToken = (sessionId: string, userId: string, parent: string | null, now: Date) =>
      Effect.gen(function*() {
        const id = yield* tokens.nextId()
        const token = deriveRefreshToken(key, sessionId, id)
        yield* tokens.insert({ id, digest: digestRefreshToken(token), userId, parent, sessionId, now })
        return token
      })

    /**
     * Starts a session for a user who just authenticated; run inside the caller's transaction. `notAfter`: when the
     * session ends whatever its refreshes (a SAML assertion's SessionNotOnOrAfter).
     */
    const start = traced("Sessions.start")(function*(
      userId: string,
      method: AuthMethod,
      now: Date,
      notAfter?: Date
    ): Effect.fn.Return<StartedSession> {
      const sessionId = yield* random.uuid()
      // Recorded as GoTrue records them, and shown to the user in their list of sessions (GET /user/sessions).
      const [userAgent, ip] = yield* Effect.all([client.userAgent, client.ip])
      yield* sessionsRepo.insert({ id: sessionId, userId, now, notAfter: notAfter ?? null, userAgent, ip })
      const refreshToken = yield* insertToken(sessionId, userId, null, now)
      yield* sessionsRepo.addAmr(sessionId, method, now)
      const { factors, identities, user } = yield* sessionsRepo.signedIn(userId, now)
      // A new session has exactly the claim just written: no need to read it back.
      return { sessionId, refreshToken, user, identities, factors, amr: [{ method, timestamp: Math.floor(now.getTime() / 1000) }] }
    })

    /**
     * A verified second factor raises the session it was verified in to aal2; run inside the caller's transaction.
     * The session's refresh tokens are revoked and a new root issued: the token the client held at aal1 can never
     * be exchanged for an aal2 one (presented again, it is reuse and ends the session). The user's other sessions
     * below aal2 end, as in GoTrue.
     */
    const stepUp = traced("Sessions.stepUp")(function*(
      sessionId: string,
      factor: FactorRow,
      now: Date
    ): Effect.fn.Return<StartedSession, AuthError> {
      // Locked first, as an exchange locks it: a sign-out racing the verification either ends the session before
      // this reads it (and the verification is refused) or waits for it.
      if (Option.isNone(yield* sessionsRepo.lockForRefresh(sessionId))) {
        return yield* AuthError.of(403, "session_not_found", "Session from session_id claim in JWT does not exist")
      }
      const amr = yield* sessionsRepo.stepUp(sessionId, METHOD_OF_FACTOR[factor.factor_type], factor.id, now)
      yield* tokens.revokeForSession(sessionId, now)
      const refreshToken = yield* insertToken(sessionId, factor.user_id, null, now)
      yield* sessionsRepo.deleteBelowAal2(factor.user_id)
      const found = yield* sessionsRepo.findForSession(factor.user_id, undefined)
      const { factors, identities, user } = Option.getOrThrowWith(found, () => new Error("the factor's user is gone"))
      return { sessionId, refreshToken, user, identities, factors, amr }
    })

    /**
     * The session's current token, handed out again: derived from its row when Gatehouse issued it; stored as it is
     * when GoTrue did (its legacy row holds the token itself, not a digest).
     */
    const childToken = (sessionId: string, current: CurrentToken) =>
      isGoTrueLegacyToken(current.token) ? current.token : tokenOfRow(key, sessionId, current)

    type Outcome =
      | { readonly _tag: "Issued"; readonly session: RefreshedSession }
      | { readonly _tag: "Refused"; readonly error: AuthError }
      /**
       * No row holds the token (an unknown token, or one of GoTrue's signed tokens, which have none), or its row is
       * behind a session GoTrue went on with: GoTrue's rules judge it as a signed token.
       */
      | { readonly _tag: "NoRow" }

    // Every statement is a round trip, and a round trip costs more CPU here than anything else an exchange does:
    // a rotation this way is six statements (two locks, the user, the rotation, the session's writes, the audit
    // entries) in a transaction. The plain rotation goes the checked way first (rotateChecked, two statements).
    const exchange = (token: string, now: Date, client: string | undefined) =>
      Effect.gen(function*() {
        // A session GoTrue started (an adopted database) presents GoTrue's own token, stored as it is; its child is
        // Gatehouse's, so after one rotation the session is Gatehouse's.
        const digest = refreshTokenLookupKey(token)
        // The session row is locked before the token row. Logout (DELETE on sessions, cascading to the tokens) and
        // reuse detection (which ends the session) lock in that order; locking the token first
        // deadlocked against both, and PostgreSQL aborted one side.
        const located = yield* tokens.lockSessionOf(digest)
        if (Option.isNone(located)) return { _tag: "NoRow" } as Outcome
        const session = located.value.session
        const locked = yield* tokens.lockForExchange(digest)
        if (Option.isNone(locked) || locked.value.row.user_id === null) return { _tag: "Refused", error: notFound } as Outcome
        const { current, nextId, row } = locked.value
        const found = yield* sessionsRepo.findForSession(row.user_id!, undefined)
        const refusal = refusalOfUser(found, now)
        if (refusal !== undefined) return { _tag: "Refused", error: refusal } as Outcome
        const { factors, identities, user } = Option.getOrThrow(found)
        if (Option.isNone(session)) {
          yield* tokens.remove(row.id)
          return {
            _tag: "Refused",
            error: AuthError.of(400, "session_not_found", "Invalid Refresh Token: No Valid Session Found")
          } as Outcome
        }
        const { id, moved_on, not_after, oauth_client_id, scopes, signed_key } = session.value
        if (isPastNotAfter(not_after, now)) return { _tag: "Refused", error: sessionExpired } as Outcome
        const wrongClient = clientRefusal(oauth_client_id, client)
        if (wrongClient !== undefined) return { _tag: "Refused", error: wrongClient } as Outcome
        const oauth = oauthOf(oauth_client_id, scopes)
        // Back from GoTrue after export-sessions: GoTrue refreshed the session past this token without revoking its
        // row. Its row alone would rotate it; GoTrue's counter says it is spent, so GoTrue's rules judge it.
        if (moved_on === true && token.length > 43) return { _tag: "NoRow" } as Outcome
        const decision = decideRefresh(
          { revoked: row.revoked === true, revokedAt: row.updated_at ?? new Date(0) },
          Option.isSome(current) && current.value.parent === row.token,
          now,
          policy
        )
        switch (decision._tag) {
          case "Rotate": {
            const child = deriveRefreshToken(key, id, nextId)
            yield* tokens.rotate(row.id, { id: nextId, digest: digestRefreshToken(child), userId: user.id, parent: row.token, sessionId: id, now })
            // A key export-sessions wrote (a switch back to GoTrue that did not happen, or that came back) goes at the
            // session's first rotation: the database holds no key of Gatehouse's while Gatehouse serves the session.
            const exported = signed_key !== undefined && signed_key !== null &&
              signed_key === sessionSigningKey(key, id).toString("base64url")
            const amr = yield* sessionsRepo.refreshed(id, now, exported ? null : undefined)
            // GoTrue's two entries for a rotation: the old token revoked, then the session refreshed.
            yield* audit.recordAll([["token_revoked", { actor: user }], ["token_refreshed", { actor: user }]])
            return { _tag: "Issued", session: { user, identities, factors, sessionId: id, refreshToken: child, amr, ...oauth } } as Outcome
          }
          case "ReturnChild":
            return {
              _tag: "Issued",
              session: {
                user,
                identities,
                factors,
                sessionId: id,
                refreshToken: childToken(id, Option.getOrThrow(current)),
                amr: yield* sessionsRepo.amr(id),
                ...oauth
              }
            } as Outcome
          case "ReuseDetected":
            return yield* endForReuse(user, id)
          case "AlreadyUsed":
            return { _tag: "Refused", error: alreadyUsed } as Outcome
        }
      })

    // Reuse means one of two holders is a thief, and which is unknowable: the session ends for both. Its access
    // tokens stop working at once (GET /user answers session_not_found, as after a sign-out), not only at their
    // expiry, and every refresh token of the family goes with it (ON DELETE CASCADE). The session row is already
    // locked by the exchange, so the delete queues no other lock.
    const endForReuse = (user: UserRow, sessionId: string) =>
      Effect.gen(function*() {
        yield* sessionsRepo.deleteForUser(user.id, { only: sessionId })
        yield* audit.record("token_revoked", { actor: user, traits: { reason: "refresh_token_reused", session_id: sessionId } })
        yield* Metric.increment(AuthMetrics.refreshTokenReuse)
        return { _tag: "Refused", error: alreadyUsed } as Outcome
      })

    /**
     * A Gatehouse token whose row is gone while its session lives. Its signature (the session's derived key, which
     * only this server holds) proves Gatehouse issued it for this session, and housekeeping deletes only revoked rows
     * that are no parent of an unrevoked one (RefreshTokenSweepRepo): rows no exchange could ever forgive. So the
     * only answer its row could have given is the one for reuse, and that is the answer without it: the session
     * ends with rotation on, AlreadyUsed with it off. (A child whose transaction rolled back was never sent.)
     */
    const sweptTokenOutcome = (user: UserRow, sessionId: string) =>
      policy.rotationEnabled ? endForReuse(user, sessionId) : Effect.succeed({ _tag: "Refused", error: alreadyUsed } as Outcome)

    /**
     * The exchange of a GoTrue signed refresh token (a session GoTrue started with its "v2" tokens, in an adopted
     * database), with the checks of every exchange and GoTrue's counter rules. Its normal use counts the token used
     * on the session row, as GoTrue would, and hands out a Gatehouse token whose parent is the signed token's
     * digest: from there the session rotates as Gatehouse's own do, and a lost answer finds that token again.
     * Lock order as the other exchange: the session row first, then the token rows (only the current one, rotated).
     */
    const exchangeSigned = (token: string, now: Date, client: string | undefined) =>
      Effect.gen(function*() {
        // Anything that does not read as a signed token, or that the session's key did not sign, is unknown, as
        // in GoTrue's lookup: a made-up token learns nothing about which sessions exist.
        const presented = parseSignedRefreshToken(token)
        if (presented === undefined) return { _tag: "Refused", error: notFound } as Outcome
        const locked = yield* sessionsRepo.lockSigned(presented.sessionId)
        if (Option.isNone(locked)) return { _tag: "Refused", error: notFound } as Outcome
        const session = locked.value
        const signingKey = signingKeyOf(session.refresh_token_hmac_key)
        const signedByGoTrue = signingKey !== undefined && session.refresh_token_counter !== null &&
          isSignedWith(presented, signingKey)
        // Not GoTrue's: one of Gatehouse's own, whose row housekeeping deleted (see sweptTokenOutcome), or unknown.
        // Only in a session that holds neither GoTrue's key nor its counter, as housekeeping sweeps none other: in a
        // keyed or counted session a token without a row may be one GoTrue issued (its counter rules judge those),
        // and one sent here because the counter moved on still has its row.
        const swept = !signedByGoTrue && session.refresh_token_hmac_key === null && session.refresh_token_counter === null &&
          isSignedWith(presented, sessionSigningKey(key, presented.sessionId))
        if (!signedByGoTrue && !swept) return { _tag: "Refused", error: notFound } as Outcome
        const found = yield* sessionsRepo.findForSession(session.user_id, undefined)
        const refusal = refusalOfUser(found, now)
        if (refusal !== undefined) return { _tag: "Refused", error: refusal } as Outcome
        const { factors, identities, user } = Option.getOrThrow(found)
        if (isPastNotAfter(session.not_after, now)) return { _tag: "Refused", error: sessionExpired } as Outcome
        const wrongClient = clientRefusal(session.oauth_client_id, client)
        if (wrongClient !== undefined) return { _tag: "Refused", error: wrongClient } as Outcome
        if (!signedByGoTrue) return yield* sweptTokenOutcome(user, session.id)
        const { id } = session
        const presentedDigest = digestRefreshToken(token)
        const { current, nextId } = yield* tokens.latestOf(id)
        // A live GoTrue legacy row beside the signed data is none of Gatehouse's: it is never handed out for a
        // signed token, and the exchange revokes it.
        const gatehouseToken = Option.isNone(current) || isGoTrueLegacyToken(current.value.token)
          ? "none"
          : current.value.parent === presentedDigest ? "child" : "other"
        const decision = decideSignedRefresh(
          presented.counter,
          {
            counter: session.refresh_token_counter,
            lastRefreshedAt: lastRefreshedAt(session.refreshed_at, session.created_at),
            gatehouseToken
          },
          now,
          policy
        )
        const issued = (refreshToken: string, amr: ReadonlyArray<AmrEntry>) =>
          ({
            _tag: "Issued",
            session: { user, identities, factors, sessionId: id, refreshToken, amr, ...oauthOf(session.oauth_client_id, session.scopes) }
          }) as Outcome
        switch (decision._tag) {
          case "NotIssuedHere":
            return { _tag: "Refused", error: notIssuedHere } as Outcome
          case "Exchange": {
            const child = deriveRefreshToken(key, id, nextId)
            const row = { id: nextId, digest: digestRefreshToken(child), userId: user.id, parent: presentedDigest, sessionId: id, now }
            yield* Option.isSome(current) ? tokens.rotate(current.value.id, row) : tokens.insert(row)
            const amr = yield* sessionsRepo.refreshed(id, now, presented.counter + 1n)
            // GoTrue's one entry for a signed token's use: no token row was revoked.
            yield* audit.record("token_refreshed", { actor: user })
            return issued(child, amr)
          }
          case "ReturnCurrent":
            return issued(childToken(id, Option.getOrThrow(current)), yield* sessionsRepo.amr(id))
          case "ReturnSigned":
            return issued(encodeSignedRefreshToken(signingKey, id, session.refresh_token_counter), yield* sessionsRepo.amr(id))
          case "ReuseDetected":
            return yield* endForReuse(user, id)
          case "AlreadyUsed":
            return { _tag: "Refused", error: alreadyUsed } as Outcome
        }
      })

    /**
     * The plain rotation in two statements and no transaction: an unlocked read of everything the exchange decides
     * on, then one atomic statement that re-checks it on the locked rows and rotates. Undefined when the read shows
     * anything but a plain rotation (exchangeDetour) or the rows changed since (a racing exchange, sign-out, ban or
     * step-up): the locked exchange then decides, exactly as it would have.
     */
    const rotateChecked = (token: string, now: Date, client: string | undefined) =>
      Effect.gen(function*() {
        const read = yield* tokens.readForExchange(refreshTokenLookupKey(token))
        if (Option.isNone(read)) return undefined
        const { nextId, row, session, user: found } = read.value
        const detour = exchangeDetour({
          currentForm: hasSignedTokenShape(token) && isDigestRow(row.token),
          tokenRevoked: row.revoked !== false,
          tokenUserId: row.user_id,
          session: session === undefined ? undefined : {
            userId: session.user_id,
            notAfter: session.not_after,
            signed: session.signed_key !== null || session.counted,
            movedOn: session.moved_on,
            oauthClientId: session.oauth_client_id
          },
          user: Option.isNone(found) ? undefined : { id: found.value.user.id, bannedUntil: found.value.user.banned_until },
          client
        }, now)
        if (detour !== undefined || session === undefined || Option.isNone(found)) return undefined
        const { factors, identities, user } = found.value
        const child = deriveRefreshToken(key, session.id, nextId)
        // The same two entries, made the same way, as the locked exchange's rotation writes.
        const entries = yield* audit.entries([["token_revoked", { actor: user }], ["token_refreshed", { actor: user }]])
        const amr = yield* tokens.rotateChecked({
          sessionId: session.id,
          tokenId: row.id,
          child: { id: nextId, digest: digestRefreshToken(child), userId: user.id, parent: row.token, sessionId: session.id, now },
          audit: entries
        })
        if (Option.isNone(amr)) return undefined
        return { user, identities, factors, sessionId: session.id, refreshToken: child, amr: amr.value } satisfies RefreshedSession
      })

    /**
     * Exchanges a refresh token. A refusal that ended the session (reuse detection) is still committed: the
     * transaction returns the refusal as a value and the error is raised only after COMMIT. `client`: the OAuth
     * client that authenticated at /oauth/token (see clientRefusal).
     */
    const refresh = traced("Sessions.refresh")(function*(
      token: string,
      now: Date,
      client?: string
    ): Effect.fn.Return<RefreshedSession, AuthError, never> {
      if (!isWellFormedRefreshToken(token)) return yield* AuthError.validation("Refresh token is not valid")
      const rotated = yield* rotateChecked(token, now, client)
      if (rotated !== undefined) return rotated
      // Gatehouse's own tokens and GoTrue's legacy ones have rows, looked up first (the hot path, one lookup). A
      // signed token no row holds is GoTrue's, whose session's row holds the key and counter.
      const outcome = yield* transactions.run(Effect.flatMap(exchange(token, now, client), (first) =>
        first._tag === "NoRow" && token.length > 43 ? exchangeSigned(token, now, client) : Effect.succeed(first))).pipe(Effect.orDie)
      switch (outcome._tag) {
        case "Issued":
          return outcome.session
        case "Refused":
          return yield* outcome.error
        case "NoRow":
          return yield* notFound
      }
    })

    /** Deleting sessions cascades to their refresh tokens and amr claims. */
    const logout = traced("Sessions.logout")(function*(
      userId: string,
      sessionId: string | undefined,
      scope: LogoutScope
    ): Effect.fn.Return<void> {
      // A token without a session_id can only mean "all of them", as in GoTrue.
      yield* sessionsRepo.deleteForUser(
        userId,
        sessionId === undefined || scope === "global" ? "all" : scope === "local" ? { only: sessionId } : { except: sessionId }
      )
    })

    /**
     * Only the plain rotation of `refresh` (rotateChecked): the session, or undefined for anything else, having
     * changed nothing. For the refresh grant's hot route, which hands anything else to the API's refresh.
     */
    const rotatePlain = (token: string, now: Date): Effect.Effect<RefreshedSession | undefined> =>
      isWellFormedRefreshToken(token) ? rotateChecked(token, now, undefined) : Effect.succeed(undefined)

    /** The user's sessions in force, newest first: at most SESSIONS_LISTED (a list is for people to read). */
    const list = (userId: string, now: Date) => sessionsRepo.listForUser(userId, now, SESSIONS_LISTED)

    /** Ends one session of the user's; false when the user has no such session (ended, or another user's). */
    const end = traced("Sessions.end")(function*(userId: string, sessionId: string): Effect.fn.Return<boolean> {
      return (yield* sessionsRepo.deleteForUser(userId, { only: sessionId })) > 0
    })

    /** Ends every session of the user's; how many there were. */
    const endAll = (userId: string) => sessionsRepo.deleteForUser(userId, "all")

    return { start, stepUp, refresh, rotatePlain, logout, list, end, endAll } as const
  }),
  dependencies: [SessionsRepo.Default, RefreshTokensRepo.Default, AuditLog.Default, CurrentClient.Default, Transactions.Live]
}) {}
