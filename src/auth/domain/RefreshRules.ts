import { Data } from "effect"

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
