import * as Data from "effect/Data"

/** What the rules need to know about the refresh token being exchanged. */
export interface PresentedToken {
  readonly revoked: boolean
  /** When it was revoked (GoTrue keeps this in updated_at). */
  readonly revokedAt: Date
}

export interface RotationPolicy {
  readonly rotationEnabled: boolean
  readonly reuseIntervalMillis: number
}

export type RefreshDecision = Data.TaggedEnum<{
  /** Valid token: revoke it and hand out a child. */
  Rotate: {}
  /** The immediate predecessor of the session's current token, within the reuse interval: hand out that child again. */
  ReturnChild: {}
  /**
   * Reuse of a revoked token: end the session (every token descending from it, which the spec revokes, and the
   * rest of the family with it) and refuse.
   */
  ReuseDetected: {}
  /** Reuse while rotation is off: refuse, revoke nothing. */
  AlreadyUsed: {}
}>
export const RefreshDecision = Data.taggedEnum<RefreshDecision>()

/**
 * Spec §3, exactly. A revoked token is forgiven only if it is the parent of the session's current token and was
 * revoked at most `reuseInterval` ago (a client that lost the response, or two tabs refreshing at once); any
 * other reuse is treated as theft.
 */
export const decideRefresh = (
  token: PresentedToken,
  isImmediateParentOfCurrent: boolean,
  now: Date,
  policy: RotationPolicy
): RefreshDecision => {
  if (!token.revoked) return RefreshDecision.Rotate()
  if (!policy.rotationEnabled) return RefreshDecision.AlreadyUsed()
  const withinInterval = now.getTime() - token.revokedAt.getTime() <= policy.reuseIntervalMillis
  return isImmediateParentOfCurrent && withinInterval ? RefreshDecision.ReturnChild() : RefreshDecision.ReuseDetected()
}

/** What the counter rules need to know about a session GoTrue signed refresh tokens for (sessions row, locked). */
export interface SignedSession {
  /** refresh_token_counter: the counter of the last token issued for the session. */
  readonly counter: bigint
  /** GoTrue's LastRefreshedAt: refreshed_at, or created_at for a session never refreshed. */
  readonly lastRefreshedAt: Date
  /**
   * The session's current Gatehouse token, once Gatehouse has exchanged one of the session's signed tokens: "none"
   * before that; "child" when the presented token is the one that exchange took (so it is its parent); "other" when
   * the session has gone on from there.
   */
  readonly gatehouseToken: "none" | "child" | "other"
}

export type SignedRefreshDecision = Data.TaggedEnum<{
  /** The counter is ahead of the session's: no server of this project issued it. */
  NotIssuedHere: {}
  /** The session's latest token: count it used and hand out a Gatehouse token in its place. */
  Exchange: {}
  /** An allowed reuse once Gatehouse has taken the session over: hand out its current Gatehouse token again. */
  ReturnCurrent: {}
  /** An allowed reuse before Gatehouse has taken the session over: hand out GoTrue's token at the session's counter. */
  ReturnSigned: {}
  /** A forbidden reuse with rotation on: end the session and refuse. */
  ReuseDetected: {}
  /** A forbidden reuse with rotation off: refuse, end nothing. */
  AlreadyUsed: {}
}>
export const SignedRefreshDecision = Data.taggedEnum<SignedRefreshDecision>()

/**
 * GoTrue's counter rules for its signed tokens (v2.196), with Gatehouse's tokens in the place of the ones GoTrue would
 * have signed next. The counter a token carries against the session's:
 * - ahead: not issued here;
 * - equal: normal use;
 * - one behind: the client lost the last answer ("fail-to-save"), allowed; once Gatehouse has taken the session over,
 *   only while the token Gatehouse gave in exchange is still the current one (Gatehouse's own rule for a lost
 *   answer: the immediate parent of the current token);
 * - further behind (or one behind after the session went on): allowed only if the session was refreshed less than
 *   the reuse interval ago, before or after now (several tabs refreshing at once); otherwise reuse.
 */
export const decideSignedRefresh = (
  presentedCounter: bigint,
  session: SignedSession,
  now: Date,
  policy: RotationPolicy
): SignedRefreshDecision => {
  const behind = session.counter - presentedCounter
  if (behind < 0n) return SignedRefreshDecision.NotIssuedHere()
  if (behind === 0n) return SignedRefreshDecision.Exchange()
  const lostAnswer = behind === 1n && session.gatehouseToken !== "other"
  const concurrent = Math.abs(now.getTime() - session.lastRefreshedAt.getTime()) < policy.reuseIntervalMillis
  if (lostAnswer || concurrent) {
    return session.gatehouseToken === "none" ? SignedRefreshDecision.ReturnSigned() : SignedRefreshDecision.ReturnCurrent()
  }
  return policy.rotationEnabled ? SignedRefreshDecision.ReuseDetected() : SignedRefreshDecision.AlreadyUsed()
}

/**
 * GoTrue's LastRefreshedAt: when the session was last refreshed, or started if never (GoTrue writes refreshed_at
 * only on a refresh). A row with neither counts as refreshed long ago: no reuse is concurrent with it.
 */
export const lastRefreshedAt = (refreshedAt: Date | null, createdAt: Date | null): Date => refreshedAt ?? createdAt ?? new Date(0)

/**
 * What the refresh grant's unlocked read says of a token, for choosing between the checked rotation (one atomic
 * statement) and the locked exchange.
 */
export interface ExchangeFacts {
  /** The presented token is of the current (signed) form, and its row holds a digest (64 hex characters). */
  readonly currentForm: boolean
  readonly tokenRevoked: boolean
  readonly tokenUserId: string | null
  /** The token's session; undefined when there is none. */
  readonly session: {
    readonly userId: string
    readonly notAfter: Date | null
    /** GoTrue signs tokens for it, or export-sessions wrote its key (refresh_token_hmac_key or _counter set). */
    readonly signed: boolean
    readonly movedOn: boolean
    readonly oauthClientId: string | null
  } | undefined
  /** The token's user, when it exists. */
  readonly user: { readonly id: string; readonly bannedUntil: Date | null } | undefined
  /** The OAuth client that authenticated the request (/oauth/token), if any. */
  readonly client: string | undefined
}

/** Why a token goes the locked way. */
export type ExchangeDetour =
  | "old_form"
  | "revoked"
  | "no_session"
  | "no_user"
  | "other_user"
  | "banned"
  | "past_not_after"
  | "signed_session"
  | "moved_on"
  | "oauth"

/**
 * The checked rotation handles only the plain case, where the locked exchange would certainly decide Rotate with
 * nothing else to do: every other case (a refusal, reuse, a lost answer, GoTrue's tokens or sessions, an OAuth
 * client's session) goes the locked way, whose rules it does not repeat. Undefined: a plain rotation.
 */
export const exchangeDetour = (facts: ExchangeFacts, now: Date): ExchangeDetour | undefined => {
  const { session, user } = facts
  if (!facts.currentForm) return "old_form"
  if (facts.tokenRevoked) return "revoked"
  if (session === undefined) return "no_session"
  if (user === undefined) return "no_user"
  if (facts.tokenUserId !== user.id || session.userId !== user.id) return "other_user"
  if (user.bannedUntil !== null && user.bannedUntil.getTime() > now.getTime()) return "banned"
  if (session.notAfter !== null && session.notAfter.getTime() <= now.getTime()) return "past_not_after"
  if (session.signed) return "signed_session"
  if (session.movedOn) return "moved_on"
  if (session.oauthClientId !== null || facts.client !== undefined) return "oauth"
  return undefined
}
