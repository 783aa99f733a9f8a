import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import {
  comparePositions,
  decodeCursor,
  DEFAULT_FEED_LIMIT,
  encodeCursor,
  type FeedPosition,
  type FeedStart,
  MAX_FEED_LIMIT,
  nextPosition,
  parseFeedLimit,
  parseFeedStart
} from "../../../src/auth/domain/RevocationFeed.js"

const xid = FastCheck.bigInt({ min: 0n, max: (1n << 64n) - 1n })
const position = FastCheck.record({ xid, sessionId: FastCheck.uuid() }) as FastCheck.Arbitrary<FeedPosition>

describe("the feed's cursor", () => {
  it.prop("round-trips every position, and one position has one spelling", [position], ([p]) => {
    expect(decodeCursor(encodeCursor(p))).toEqual(p)
    expect(Either.getOrThrow(parseFeedStart(encodeCursor(p)))).toEqual({ _tag: "After", position: p })
  })

  it.prop("anything else is not a cursor (never a throw)", [FastCheck.string({ maxLength: 120 })], ([text]) => {
    const decoded = decodeCursor(text)
    if (decoded !== undefined) expect(encodeCursor(decoded)).toBe(text)
  })

  it.each([
    Buffer.from("1.not-a-uuid").toString("base64url"),
    Buffer.from("01.00000000-0000-0000-0000-000000000000").toString("base64url"),
    Buffer.from("18446744073709551616.00000000-0000-0000-0000-000000000000").toString("base64url"),
    Buffer.from("-1.00000000-0000-0000-0000-000000000000").toString("base64url"),
    Buffer.from("1.00000000-0000-0000-0000-00000000000G").toString("base64url"),
    `${Buffer.from("1.00000000-0000-0000-0000-000000000000").toString("base64url")}=`,
    ""
  ])("refuses %j", (text) => {
    expect(decodeCursor(text)).toBeUndefined()
  })
})

describe("since and limit", () => {
  it("absent or empty since: every row kept; a timestamp: rows ended at or after it", () => {
    expect(parseFeedStart(undefined)).toEqual(Either.right({ _tag: "Beginning" }))
    expect(parseFeedStart("")).toEqual(Either.right({ _tag: "Beginning" }))
    expect(parseFeedStart("2026-11-27T06:00:00.123Z")).toEqual(Either.right({ _tag: "Since", at: new Date("2026-11-27T06:00:00.123Z") }))
    expect(parseFeedStart("2026-11-27T07:00:00+01:00")).toEqual(Either.right({ _tag: "Since", at: new Date("2026-11-27T06:00:00Z") }))
  })

  it.each(["yesterday", "2026-11-27", "2026-13-45T99:99:99Z", "1764223200", "2026-11-27 06:00:00Z"])("since %j is refused", (since) => {
    expect(Either.isLeft(parseFeedStart(since))).toBe(true)
  })

  it.prop("a date's ISO text is read back as that date", [FastCheck.date({ min: new Date(0), max: new Date(Date.UTC(9999, 0)), noInvalidDate: true })], ([at]) => {
    expect(parseFeedStart(at.toISOString())).toEqual(Either.right({ _tag: "Since", at }))
  })

  it("limit: default, capped, positive digits only", () => {
    expect(parseFeedLimit(undefined)).toEqual(Either.right(DEFAULT_FEED_LIMIT))
    expect(parseFeedLimit("")).toEqual(Either.right(DEFAULT_FEED_LIMIT))
    expect(parseFeedLimit("7")).toEqual(Either.right(7))
    expect(parseFeedLimit("999999")).toEqual(Either.right(MAX_FEED_LIMIT))
    for (const bad of ["0", "00", "-1", "1.5", "x", " 1", "1234567890123456"]) expect(Either.isLeft(parseFeedLimit(bad))).toBe(true)
  })
})

/**
 * The feed as a model: rows at positions, some below the horizon (finished transactions) and some above (still
 * running, then committing). Paging with nextPosition from any start, with rows committing between pages, lists every
 * row after the start exactly once.
 */
describe("nextPosition", () => {
  const rowsArb = FastCheck.uniqueArray(
    FastCheck.record({ xid: FastCheck.bigInt({ min: 3n, max: 60n }), sessionId: FastCheck.uuid() }) as FastCheck.Arbitrary<FeedPosition>,
    { maxLength: 30, selector: (p) => `${p.xid}.${p.sessionId}` }
  )

  it.prop("paging while transactions finish lists every row after the start, once, in order", [
    rowsArb,
    FastCheck.integer({ min: 1, max: 5 }),
    FastCheck.bigInt({ min: 3n, max: 61n }),
    FastCheck.array(FastCheck.bigInt({ min: 0n, max: 8n }), { minLength: 40, maxLength: 40 })
  ], ([rows, limit, firstHorizon, steps]) => {
    const sorted = [...rows].sort(comparePositions)
    let horizon = firstHorizon
    let start: FeedStart = { _tag: "Beginning" }
    const seen: Array<FeedPosition> = []
    for (const step of steps) {
      const after = start._tag === "After" ? start.position : undefined
      const visible = sorted.filter((row) => row.xid < horizon && (after === undefined || comparePositions(row, after) > 0))
      const page = visible.slice(0, limit)
      seen.push(...page)
      const { more, next } = nextPosition(start, page, limit, horizon)
      expect(more).toBe(page.length === limit)
      if (after !== undefined) expect(comparePositions(next, after)).toBeGreaterThanOrEqual(0)
      start = { _tag: "After", position: next }
      // Transactions finish: the horizon only moves forward.
      horizon = horizon + step
    }
    // Once the horizon passed every row and the pages caught up, each row was listed exactly once, in order.
    if (horizon > 61n) {
      const { next } = nextPosition(start, [], limit, horizon)
      const rest = sorted.filter((row) => comparePositions(row, start._tag === "After" ? start.position : next) > 0)
      expect([...seen, ...rest]).toEqual(sorted)
    }
    expect(seen).toEqual(sorted.slice(0, seen.length))
  })

  it("an empty page from a timestamp moves to the horizon; never behind a cursor handed in", () => {
    expect(nextPosition({ _tag: "Since", at: new Date(0) }, [], 10, 100n).next).toEqual({ xid: 99n, sessionId: "ffffffff-ffff-ffff-ffff-ffffffffffff" })
    const ahead = { xid: 500n, sessionId: "00000000-0000-0000-0000-000000000001" }
    expect(nextPosition({ _tag: "After", position: ahead }, [], 10, 100n)).toEqual({ next: ahead, more: false })
  })
})
