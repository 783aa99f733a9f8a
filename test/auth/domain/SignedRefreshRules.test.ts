import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import {
  decideSignedRefresh,
  lastRefreshedAt,
  type RotationPolicy,
  SignedRefreshDecision,
  type SignedSession
} from "../../../src/auth/domain/RefreshRules.js"

const interval = 10_000
const rotating: RotationPolicy = { rotationEnabled: true, reuseIntervalMillis: interval }
const notRotating: RotationPolicy = { rotationEnabled: false, reuseIntervalMillis: interval }
const refreshedAt = new Date("2030-01-01T00:00:00.000Z")
const after = (ms: number) => new Date(refreshedAt.getTime() + ms)
const session = (counter: bigint, gatehouseToken: SignedSession["gatehouseToken"] = "none"): SignedSession => ({
  counter,
  lastRefreshedAt: refreshedAt,
  gatehouseToken
})

const counter = FastCheck.bigInt({ min: 0n, max: 2n ** 63n - 1n })
const gatehouseToken = FastCheck.constantFrom("none" as const, "child" as const, "other" as const)
const policy = FastCheck.record({ rotationEnabled: FastCheck.boolean(), reuseIntervalMillis: FastCheck.nat({ max: 86_400_000 }) })
const offset = FastCheck.integer({ min: -86_400_000, max: 86_400_000 })

describe("decideSignedRefresh (GoTrue's counter rules for its signed tokens)", () => {
  it.prop("a counter ahead of the session's was not issued here, whatever else", [counter, counter, gatehouseToken, offset, policy],
    ([a, b, g, ms, p]) => {
      FastCheck.pre(a !== b)
      const [sessionCounter, presented] = a < b ? [a, b] : [b, a]
      expect(decideSignedRefresh(presented, session(sessionCounter, g), after(ms), p)).toStrictEqual(SignedRefreshDecision.NotIssuedHere())
    })

  it.prop("the session's own counter is normal use, whatever else", [counter, gatehouseToken, offset, policy], ([n, g, ms, p]) => {
    expect(decideSignedRefresh(n, session(n, g), after(ms), p)).toStrictEqual(SignedRefreshDecision.Exchange())
  })

  it.prop("one behind is a lost answer at any time: GoTrue's token again before Gatehouse took over, else the child it gave",
    [FastCheck.bigInt({ min: 1n, max: 2n ** 63n - 1n }), offset, policy], ([n, ms, p]) => {
      expect(decideSignedRefresh(n - 1n, session(n, "none"), after(ms), p)).toStrictEqual(SignedRefreshDecision.ReturnSigned())
      expect(decideSignedRefresh(n - 1n, session(n, "child"), after(ms), p)).toStrictEqual(SignedRefreshDecision.ReturnCurrent())
    })

  it.prop("further behind, or one behind once the session went on: allowed only within the interval of the last refresh",
    [FastCheck.bigInt({ min: 2n, max: 2n ** 63n - 1n }), FastCheck.bigInt({ min: 1n, max: 100n }), gatehouseToken, offset, policy],
    ([n, back, g, ms, p]) => {
      const behind = g === "other" ? back : back + 1n
      FastCheck.pre(behind <= n)
      const decision = decideSignedRefresh(n - behind, session(n, g), after(ms), p)
      const expected = Math.abs(ms) < p.reuseIntervalMillis
        ? g === "none" ? SignedRefreshDecision.ReturnSigned() : SignedRefreshDecision.ReturnCurrent()
        : p.rotationEnabled
        ? SignedRefreshDecision.ReuseDetected()
        : SignedRefreshDecision.AlreadyUsed()
      expect(decision).toStrictEqual(expected)
    })

  it("the interval is open at both ends, as GoTrue's (a refresh exactly the interval away is reuse)", () => {
    expect(decideSignedRefresh(3n, session(5n), after(interval - 1), rotating)).toStrictEqual(SignedRefreshDecision.ReturnSigned())
    expect(decideSignedRefresh(3n, session(5n), after(-(interval - 1)), rotating)).toStrictEqual(SignedRefreshDecision.ReturnSigned())
    expect(decideSignedRefresh(3n, session(5n), after(interval), rotating)).toStrictEqual(SignedRefreshDecision.ReuseDetected())
    expect(decideSignedRefresh(3n, session(5n), after(interval), notRotating)).toStrictEqual(SignedRefreshDecision.AlreadyUsed())
    expect(decideSignedRefresh(4n, session(5n, "other"), after(interval), rotating)).toStrictEqual(SignedRefreshDecision.ReuseDetected())
  })

  it("a session is last refreshed at refreshed_at, else when it started", () => {
    const started = new Date("2029-12-31T00:00:00.000Z")
    expect(lastRefreshedAt(refreshedAt, started)).toBe(refreshedAt)
    expect(lastRefreshedAt(null, started)).toBe(started)
    expect(lastRefreshedAt(null, null).getTime()).toBe(0)
  })
})
