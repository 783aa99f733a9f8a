import { describe, expect, it } from "@effect/vitest"
import { Duration, FastCheck } from "effect"
import {
  claimQuota,
  giveBackQuota,
  overSendQuota,
  type SendQuotaCount,
  sendQuotaWindow
} from "../../../src/auth/domain/SendQuotaWindow.js"

// Moments from 1970 to 2100, and periods from one second to a week, in whole milliseconds.
const moment = FastCheck.integer({ min: 0, max: 4_102_444_800_000 }).map((ms) => new Date(ms))
const period = FastCheck.integer({ min: 1_000, max: 7 * 24 * 3_600_000 }).map(Duration.millis)

describe("sendQuotaWindow", () => {
  it("an hourly window starts on the hour and ends at the next", () => {
    const window = sendQuotaWindow(Duration.hours(1), new Date("2030-01-01T10:59:30.250Z"))
    expect(window).toEqual({ start: new Date("2030-01-01T10:00:00Z"), secondsLeft: 30 })
    expect(sendQuotaWindow(Duration.hours(1), new Date("2030-01-01T11:00:00Z")))
      .toEqual({ start: new Date("2030-01-01T11:00:00Z"), secondsLeft: 3600 })
  })

  it.prop("the window holds the moment and starts on a multiple of the period", [period, moment], ([per, now]) => {
    const { start } = sendQuotaWindow(per, now)
    const ms = Duration.toMillis(per)
    expect(start.getTime() % ms).toBe(0)
    expect(start.getTime()).toBeLessThanOrEqual(now.getTime())
    expect(now.getTime()).toBeLessThan(start.getTime() + ms)
  })

  it.prop("every moment of a window falls in that same window", [period, moment, FastCheck.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })], ([per, now, fraction]) => {
    const { start } = sendQuotaWindow(per, now)
    const later = new Date(start.getTime() + Math.floor(fraction * Duration.toMillis(per)))
    expect(sendQuotaWindow(per, later).start).toEqual(start)
  })

  it.prop("Retry-After is whole seconds, at least 1, and waiting it out reaches the next window", [period, moment], ([per, now]) => {
    const { start, secondsLeft } = sendQuotaWindow(per, now)
    expect(Number.isInteger(secondsLeft)).toBe(true)
    expect(secondsLeft).toBeGreaterThanOrEqual(1)
    expect(secondsLeft).toBeLessThanOrEqual(Math.ceil(Duration.toSeconds(per)))
    const after = sendQuotaWindow(per, new Date(now.getTime() + secondsLeft * 1000))
    expect(after.start.getTime()).toBeGreaterThan(start.getTime())
    // One second less would still be too soon (unless the window ends within the first second).
    if (secondsLeft > 1) expect(sendQuotaWindow(per, new Date(now.getTime() + (secondsLeft - 1) * 1000)).start).toEqual(start)
  })
})

const count = (windowStart: number, sent: number): SendQuotaCount => ({ windowStart: new Date(windowStart), sent })

describe("claimQuota", () => {
  it.prop("within one window exactly `limit` claims succeed, from any start", [FastCheck.integer({ min: 0, max: 50 }), FastCheck.integer({ min: 1, max: 80 })], ([limit, attempts]) => {
    let row: SendQuotaCount | undefined = undefined
    let granted = 0
    for (let i = 0; i < attempts; i++) {
      const next = claimQuota(row, new Date(0), limit)
      if (next !== undefined) {
        granted++
        row = next
      }
    }
    expect(granted).toBe(Math.min(limit, attempts))
  })

  it("a new window starts over; a lagging clock counts against the newer window and never reopens it", () => {
    expect(claimQuota(count(0, 5), new Date(1000), 5)).toEqual(count(1000, 1))
    expect(claimQuota(count(1000, 4), new Date(0), 5)).toEqual(count(1000, 5))
    expect(claimQuota(count(1000, 5), new Date(0), 5)).toBeUndefined()
  })

  it("a limit of 0 refuses everything", () => {
    expect(claimQuota(undefined, new Date(0), 0)).toBeUndefined()
  })

  it.prop("giving back a claim restores the count it was claimed from, in the same window", [FastCheck.integer({ min: 0, max: 9 }), FastCheck.integer({ min: 10, max: 20 })], ([sent, limit]) => {
    const before = count(0, sent)
    const claimed = claimQuota(before, new Date(0), limit)!
    expect(giveBackQuota(claimed, new Date(0))).toEqual(before)
  })

  it("a give-back for an ended window leaves the new window's count alone", () => {
    expect(giveBackQuota(count(1000, 3), new Date(0))).toEqual(count(1000, 3))
    expect(giveBackQuota(undefined, new Date(0))).toBeUndefined()
  })
})

describe("overSendQuota", () => {
  it("is GoTrue's 429 for the channel, with the seconds to wait", () => {
    expect(overSendQuota("email", 42)).toMatchObject({ status: 429, code: "over_email_send_rate_limit", message: "Email rate limit exceeded", retryAfter: 42 })
    expect(overSendQuota("sms", 7)).toMatchObject({ status: 429, code: "over_sms_send_rate_limit", message: "SMS rate limit exceeded", retryAfter: 7 })
  })
})
