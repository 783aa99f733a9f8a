import * as Either from "effect/Either"

/**
 * The revocation feed's rules (GET /admin/revoked-sessions): where a page starts, how many rows it holds, and the
 * cursor it hands on. Rows are ordered by (xid, session_id): the ending transaction's id, then the session. The feed
 * lists only rows of transactions older than the reader's snapshot xmin (the horizon), all of which have finished,
 * so a cursor once handed out never has a row committed behind it later.
 */

/** A row's place in the feed: its transaction id (decimal, an xid8) and its session id. */
export interface FeedPosition {
  readonly xid: bigint
  readonly sessionId: string
}

export type FeedStart =
  | { readonly _tag: "Beginning" }
  | { readonly _tag: "Since"; readonly at: Date }
  | { readonly _tag: "After"; readonly position: FeedPosition }

export const DEFAULT_FEED_LIMIT = 100
export const MAX_FEED_LIMIT = 1000

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const MAX_XID8 = (1n << 64n) - 1n
/** The last session id of a transaction: a position past every row of it. */
const LAST_SESSION = "ffffffff-ffff-ffff-ffff-ffffffffffff"

/** RFC 3339, as JavaScript's Date.toISOString and Go's time.RFC3339Nano write it. */
export const RFC3339_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$"
const RFC3339 = new RegExp(RFC3339_PATTERN)
/** A cursor: base64url without padding. */
export const CURSOR_PATTERN = "^[A-Za-z0-9_-]{1,80}$"

/** The cursor of a position: opaque to a client, which hands it back as `since`. */
export const encodeCursor = (position: FeedPosition): string =>
  Buffer.from(`${position.xid}.${position.sessionId}`, "utf8").toString("base64url")

/** The position a cursor names, or undefined for anything this server did not write. */
export const decodeCursor = (cursor: string): FeedPosition | undefined => {
  if (!/^[A-Za-z0-9_-]{1,80}$/.test(cursor)) return undefined
  const text = Buffer.from(cursor, "base64url").toString("utf8")
  const match = /^(0|[1-9][0-9]{0,19})\.([0-9a-f-]{36})$/.exec(text)
  if (match === null || !UUID.test(match[2]!)) return undefined
  const xid = BigInt(match[1]!)
  if (xid > MAX_XID8) return undefined
  const position = { xid, sessionId: match[2]! }
  // One spelling per position, so that a cursor compares by its text too.
  return encodeCursor(position) === cursor ? position : undefined
}

/** `since`: absent (every row kept), an RFC 3339 timestamp (rows ended at or after it), or a cursor (rows after it). */
export const parseFeedStart = (since: string | undefined): Either.Either<FeedStart, string> => {
  if (since === undefined || since === "") return Either.right({ _tag: "Beginning" })
  if (RFC3339.test(since)) {
    const at = new Date(since)
    return Number.isNaN(at.getTime()) ? Either.left("since is not a valid timestamp") : Either.right({ _tag: "Since", at })
  }
  const position = decodeCursor(since)
  return position === undefined
    ? Either.left("since must be an RFC 3339 timestamp or the cursor of a previous page")
    : Either.right({ _tag: "After", position })
}

/** `limit`: 1 to MAX_FEED_LIMIT rows, DEFAULT_FEED_LIMIT when absent. */
export const parseFeedLimit = (limit: string | undefined): Either.Either<number, string> => {
  if (limit === undefined || limit === "") return Either.right(DEFAULT_FEED_LIMIT)
  if (!/^[0-9]{1,15}$/.test(limit) || Number(limit) === 0) return Either.left("limit must be a positive integer")
  return Either.right(Math.min(Number(limit), MAX_FEED_LIMIT))
}

export const comparePositions = (a: FeedPosition, b: FeedPosition): number =>
  a.xid < b.xid ? -1 : a.xid > b.xid ? 1 : a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0

/**
 * Where the next page starts. A full page: after its last row (more may follow). A page that is not full holds every
 * row below the horizon after its start, so the next starts at the horizon, past every transaction older than it
 * (rows a `since` left out ended before it, and stay out); never before where this page started.
 */
export const nextPosition = (
  start: FeedStart,
  page: ReadonlyArray<FeedPosition>,
  limit: number,
  horizon: bigint
): { readonly next: FeedPosition; readonly more: boolean } => {
  const last = page[page.length - 1]
  if (last !== undefined && page.length >= limit) return { next: last, more: true }
  const atHorizon: FeedPosition = { xid: horizon > 0n ? horizon - 1n : 0n, sessionId: LAST_SESSION }
  const floor = start._tag === "After" ? start.position : undefined
  const candidates = [atHorizon, ...(last === undefined ? [] : [last]), ...(floor === undefined ? [] : [floor])]
  return { next: candidates.reduce((a, b) => (comparePositions(a, b) >= 0 ? a : b)), more: false }
}
