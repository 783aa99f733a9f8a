import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { decideRefresh, exchangeDetour, type ExchangeFacts, RefreshDecision, type RotationPolicy } from "../../../src/auth/domain/RefreshRules.js"

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

describe("exchangeDetour (issue 30: which refreshes the checked rotation takes)", () => {
  const now = new Date(base)
  const offset = FastCheck.option(FastCheck.integer({ min: -5_000, max: 5_000 }).map((ms) => new Date(base + ms)), { nil: null })
  const id = FastCheck.constantFrom("u1", "u2")
  const facts: FastCheck.Arbitrary<ExchangeFacts> = FastCheck.record({
    currentForm: FastCheck.boolean(),
    tokenRevoked: FastCheck.boolean(),
    tokenUserId: FastCheck.option(id, { nil: null }),
    session: FastCheck.option(
      FastCheck.record({
        userId: id,
        notAfter: offset,
        signed: FastCheck.boolean(),
        movedOn: FastCheck.boolean(),
        oauthClientId: FastCheck.option(FastCheck.constant("c1"), { nil: null })
      }),
      { nil: undefined }
    ),
    user: FastCheck.option(FastCheck.record({ id, bannedUntil: offset }), { nil: undefined }),
    client: FastCheck.option(FastCheck.constant("c1"), { nil: undefined })
  })

  it.prop("only a plain rotation (what the locked exchange would certainly rotate) takes no detour", [facts], ([f]) => {
    const plain = f.currentForm && !f.tokenRevoked && f.session !== undefined && f.user !== undefined &&
      f.tokenUserId === f.user.id && f.session.userId === f.user.id &&
      (f.user.bannedUntil === null || f.user.bannedUntil.getTime() <= now.getTime()) &&
      (f.session.notAfter === null || f.session.notAfter.getTime() > now.getTime()) &&
      !f.session.signed && !f.session.movedOn && f.session.oauthClientId === null && f.client === undefined
    expect(exchangeDetour(f, now) === undefined).toBe(plain)
  })

  it("names the reason", () => {
    const plain: ExchangeFacts = {
      currentForm: true,
      tokenRevoked: false,
      tokenUserId: "u1",
      session: { userId: "u1", notAfter: null, signed: false, movedOn: false, oauthClientId: null },
      user: { id: "u1", bannedUntil: null },
      client: undefined
    }
    const session = plain.session!
    expect(exchangeDetour(plain, now)).toBeUndefined()
    expect(exchangeDetour({ ...plain, currentForm: false }, now)).toBe("old_form")
    expect(exchangeDetour({ ...plain, tokenRevoked: true }, now)).toBe("revoked")
    expect(exchangeDetour({ ...plain, session: undefined }, now)).toBe("no_session")
    expect(exchangeDetour({ ...plain, user: undefined }, now)).toBe("no_user")
    expect(exchangeDetour({ ...plain, tokenUserId: null }, now)).toBe("other_user")
    expect(exchangeDetour({ ...plain, user: { id: "u1", bannedUntil: new Date(base + 1) } }, now)).toBe("banned")
    expect(exchangeDetour({ ...plain, user: { id: "u1", bannedUntil: now } }, now)).toBeUndefined()
    expect(exchangeDetour({ ...plain, session: { ...session, notAfter: now } }, now)).toBe("past_not_after")
    expect(exchangeDetour({ ...plain, session: { ...session, signed: true } }, now)).toBe("signed_session")
    expect(exchangeDetour({ ...plain, session: { ...session, movedOn: true } }, now)).toBe("moved_on")
    expect(exchangeDetour({ ...plain, session: { ...session, oauthClientId: "c1" } }, now)).toBe("oauth")
    expect(exchangeDetour({ ...plain, client: "c1" }, now)).toBe("oauth")
  })
})
