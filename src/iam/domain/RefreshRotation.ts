import * as Data from "effect/Data"

/** What the database knows about a refresh token. */
export interface StoredRefreshToken {
  readonly expiresAt: Date
  /** Set when the token was exchanged for a child: exchanging it again is reuse, or a retry within the interval. */
  readonly spentAt: Date | null
  /** Set when the token (or its family) was revoked by logout or reuse detection. */
  readonly revokedAt: Date | null
}

/** A presented token as the rule sees it: the stored row, and for a spent token the child it was exchanged for. */
export interface PresentedRefreshToken extends StoredRefreshToken {
  readonly child?: StoredRefreshToken | undefined
}

export interface RotationPolicy {
  /** How long after a token was spent presenting it again still gets its child (0: never). */
  readonly reuseIntervalMillis: number
}

export type RefreshRejection = "unknown" | "expired" | "revoked"

export type RefreshDecision = Data.TaggedEnum<{
  /** Spend the token and issue its child in the same family. */
  Rotate: {}
  /** A retry or a concurrent refresh of a token just spent: hand out the child it was exchanged for, again. */
  ReturnChild: {}
  /** Refuse; nothing changes. */
  Reject: { readonly reason: RefreshRejection }
  /** A spent token came back: someone holds a copy. Revoke the whole family, then refuse. */
  ReuseDetected: {}
}>
export const RefreshDecision = Data.taggedEnum<RefreshDecision>()

const isCurrent = (token: StoredRefreshToken): boolean => token.spentAt === null && token.revokedAt === null

/**
 * The refresh-token rotation rule (RFC 9700 section 4.14.2), with the auth server's reuse interval. Revocation
 * wins over everything: once a family is revoked, presenting any of its tokens is a plain refusal. A spent token
 * presented again is forgiven only while its child is still the session's current token and at most
 * `reuseIntervalMillis` after it was spent (a client that lost the response, or two tabs refreshing at once):
 * it gets that same child. Any other reuse is treated as theft. A child past its expiry (its session ended) is
 * never handed out.
 */
export const decideRefresh = (
  stored: PresentedRefreshToken | undefined,
  now: Date,
  policy: RotationPolicy
): RefreshDecision => {
  if (stored === undefined) return RefreshDecision.Reject({ reason: "unknown" })
  if (stored.revokedAt !== null) return RefreshDecision.Reject({ reason: "revoked" })
  if (stored.spentAt !== null) {
    const { child } = stored
    const forgiven = policy.reuseIntervalMillis > 0 &&
      now.getTime() - stored.spentAt.getTime() <= policy.reuseIntervalMillis &&
      child !== undefined && isCurrent(child)
    if (!forgiven) return RefreshDecision.ReuseDetected()
    return now.getTime() >= child.expiresAt.getTime()
      ? RefreshDecision.Reject({ reason: "expired" })
      : RefreshDecision.ReturnChild()
  }
  return now.getTime() >= stored.expiresAt.getTime()
    ? RefreshDecision.Reject({ reason: "expired" })
    : RefreshDecision.Rotate()
}

/**
 * When a session started at `now` ends whatever refreshes it sees: GenerateToken's `ttl_seconds`, at most the
 * refresh-token lifetime (the first refresh token could not outlive that anyway). No ttl: it has no fixed end,
 * and lasts as long as it keeps being refreshed.
 */
export const sessionEnd = (now: Date, requestedTtlMillis: number | undefined, refreshTtlMillis: number): Date | null =>
  requestedTtlMillis === undefined ? null : new Date(now.getTime() + Math.min(requestedTtlMillis, refreshTtlMillis))

/** When a token issued at `now` with lifetime `ttlMillis` expires: never after its session's end. */
export const tokenExpiry = (now: Date, ttlMillis: number, sessionEndsAt: Date | null): Date =>
  new Date(Math.min(now.getTime() + ttlMillis, sessionEndsAt === null ? Infinity : sessionEndsAt.getTime()))
