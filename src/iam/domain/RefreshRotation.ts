import { Data } from "effect"

/** What the database knows about a presented refresh token. */
export interface StoredRefreshToken {
  readonly expiresAt: Date
  /** Set when the token was exchanged for a child: it must never be exchanged again. */
  readonly spentAt: Date | null
  /** Set when the token (or its family) was revoked by logout or reuse detection. */
  readonly revokedAt: Date | null
}

export type RefreshRejection = "unknown" | "expired" | "revoked"

export type RefreshDecision = Data.TaggedEnum<{
  /** Spend the token and issue its child in the same family. */
  Rotate: {}
  /** Refuse; nothing changes. */
  Reject: { readonly reason: RefreshRejection }
  /** A spent token came back: someone holds a copy. Revoke the whole family, then refuse. */
  ReuseDetected: {}
}>
export const RefreshDecision = Data.taggedEnum<RefreshDecision>()

/**
 * The refresh-token rotation rule (RFC 9700 section 4.14.2). Revocation wins over reuse: once a family is
 * revoked, presenting any of its tokens is a plain refusal. There is no grace window for a lost response:
 * the client must sign in again, which is the price of detecting every replay.
 */
export const decideRefresh = (stored: StoredRefreshToken | undefined, now: Date): RefreshDecision =>
  stored === undefined
    ? RefreshDecision.Reject({ reason: "unknown" })
    : stored.revokedAt !== null
    ? RefreshDecision.Reject({ reason: "revoked" })
    : stored.spentAt !== null
    ? RefreshDecision.ReuseDetected()
    : now.getTime() >= stored.expiresAt.getTime()
    ? RefreshDecision.Reject({ reason: "expired" })
    : RefreshDecision.Rotate()
