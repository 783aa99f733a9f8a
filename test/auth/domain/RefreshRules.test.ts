import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { decideRefresh, RefreshDecision, type RotationPolicy } from "../../../src/auth/domain/RefreshRules.js"

const interval = 10_000
const rotating: RotationPolicy = { rotationEnabled: true, reuseIntervalMillis: interval }
const notRotating: RotationPolicy = { rotationEnabled: false, reuseIntervalMillis: interval }
const revokedAt = new Date("2030-01-01T00:00:00.000Z")
const after = (ms: number) => new Date(revokedAt.getTime() + ms)
const revoked = { revoked: true, revokedAt }

describe("decideRefresh (spec §3)", () => {
  it("a valid token is rotated, whatever the policy or its revokedAt", () => {
    expect(decideRefresh({ revoked: false, revokedAt }, false, after(1e9), rotating)).toStrictEqual(RefreshDecision.Rotate())
    expect(decideRefresh({ revoked: false, revokedAt }, true, after(0), notRotating)).toStrictEqual(RefreshDecision.Rotate())
  })

  it("the immediate predecessor within the interval gets the current child back, the boundary included", () => {
    expect(decideRefresh(revoked, true, after(0), rotating)).toStrictEqual(RefreshDecision.ReturnChild())
    expect(decideRefresh(revoked, true, after(interval), rotating)).toStrictEqual(RefreshDecision.ReturnChild())
  })

  it("the immediate predecessor one millisecond past the interval is reuse", () => {
    expect(decideRefresh(revoked, true, after(interval + 1), rotating)).toStrictEqual(RefreshDecision.ReuseDetected())
  })

  it("an older ancestor is reuse even within the interval", () => {
    expect(decideRefresh(revoked, false, after(0), rotating)).toStrictEqual(RefreshDecision.ReuseDetected())
  })

  it("with a zero interval only a same-instant retry is forgiven", () => {
    const strict: RotationPolicy = { rotationEnabled: true, reuseIntervalMillis: 0 }
    expect(decideRefresh(revoked, true, after(0), strict)).toStrictEqual(RefreshDecision.ReturnChild())
    expect(decideRefresh(revoked, true, after(1), strict)).toStrictEqual(RefreshDecision.ReuseDetected())
  })

  it("with rotation off a revoked token is refused and nothing is revoked", () => {
    expect(decideRefresh(revoked, true, after(0), notRotating)).toStrictEqual(RefreshDecision.AlreadyUsed())
    expect(decideRefresh(revoked, false, after(1e9), notRotating)).toStrictEqual(RefreshDecision.AlreadyUsed())
  })
})

const base = Date.UTC(2030, 0, 1)
// Elapsed time is drawn as often right at the interval boundary (±2 ms) as anywhere in 0..3× the interval.
const timing = FastCheck.integer({ min: 0, max: 3_600_000 }).chain((interval) =>
  FastCheck.record({
    interval: FastCheck.constant(interval),
    elapsed: FastCheck.oneof(
      FastCheck.integer({ min: 0, max: 3 * interval + 1 }),
      FastCheck.integer({ min: -2, max: 2 }).map((d) => Math.max(0, interval + d))
    )
  })
)
const inputs = FastCheck.record({
  revoked: FastCheck.boolean(),
  revokedAtOffset: FastCheck.integer({ min: -1e9, max: 1e9 }),
  isImmediateParent: FastCheck.boolean(),
  rotationEnabled: FastCheck.boolean(),
  timing
}).map((r) => {
  const revokedAt = new Date(base + r.revokedAtOffset)
  return {
    token: { revoked: r.revoked, revokedAt },
    isImmediateParent: r.isImmediateParent,
    now: new Date(revokedAt.getTime() + r.timing.elapsed),
    policy: { rotationEnabled: r.rotationEnabled, reuseIntervalMillis: r.timing.interval }
  }
})

describe("decideRefresh properties", () => {
  it.prop("a token that is not revoked is always rotated", [inputs], ([i]) => {
    expect(decideRefresh({ ...i.token, revoked: false }, i.isImmediateParent, i.now, i.policy)._tag).toBe("Rotate")
  })

  it.prop("ReturnChild iff revoked, rotation on, immediate parent and now - revokedAt <= interval", [inputs], ([i]) => {
    const decision = decideRefresh(i.token, i.isImmediateParent, i.now, i.policy)
    const expected = i.token.revoked && i.policy.rotationEnabled && i.isImmediateParent &&
      i.now.getTime() - i.token.revokedAt.getTime() <= i.policy.reuseIntervalMillis
    expect(decision._tag === "ReturnChild").toBe(expected)
  })

  it.prop("a revoked token with rotation on is either forgiven or reuse, never rotated again", [inputs], ([i]) => {
    const decision = decideRefresh({ ...i.token, revoked: true }, i.isImmediateParent, i.now, {
      ...i.policy,
      rotationEnabled: true
    })
    expect(["ReturnChild", "ReuseDetected"]).toContain(decision._tag)
  })

  it.prop("rotation off never yields ReturnChild or ReuseDetected", [inputs], ([i]) => {
    const decision = decideRefresh(i.token, i.isImmediateParent, i.now, { ...i.policy, rotationEnabled: false })
    expect(decision._tag).toBe(i.token.revoked ? "AlreadyUsed" : "Rotate")
  })

  it.prop("forgiveness only shrinks as time passes", [inputs, FastCheck.integer({ min: 0, max: 1e7 })], ([i, later]) => {
    const first = decideRefresh(i.token, i.isImmediateParent, i.now, i.policy)
    const second = decideRefresh(i.token, i.isImmediateParent, new Date(i.now.getTime() + later), i.policy)
    if (second._tag === "ReturnChild") expect(first._tag).toBe("ReturnChild")
  })
})
