import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import {
  admitRecipientSend,
  giveBackRecipientSend,
  liveSends,
  normalisedRecipient,
  overRecipientLimit,
  type RecipientLimit,
  recipientDigestKey,
  recipientKey,
  recipientRowExpiry
} from "../../../src/auth/domain/RecipientSendWindow.js"

// Limits from 1 to 8 messages, periods from one millisecond to a day, moments from 1970 to 2100.
const rule = FastCheck.record({
  limit: FastCheck.integer({ min: 1, max: 8 }),
  periodMs: FastCheck.integer({ min: 1, max: 86_400_000 })
})
const moment = FastCheck.integer({ min: 0, max: 4_102_444_800_000 })
// Attempts as gaps from a start: many close together, some a period or more apart.
const attempts = FastCheck.array(FastCheck.integer({ min: 0, max: 200_000_000 }), { maxLength: 40 })
// The send times a row may hold, including some ahead of now (another instance's clock runs ahead).
const someSends = (now: number) => FastCheck.array(FastCheck.integer({ min: now - 200_000_000, max: now + 5_000_000 }), { maxLength: 12 })

/** Sends `attempts` (gaps, in order) one after another from `start`: the times of those allowed. */
const run = (start: number, gaps: ReadonlyArray<number>, limits: RecipientLimit) => {
  let row: ReadonlyArray<number> = []
  let now = start
  const admitted: Array<number> = []
  for (const gap of gaps) {
    now += gap
    const send = admitRecipientSend(row, now, limits)
    if (send.allowed) {
      row = send.sent
      admitted.push(now)
    }
  }
  return { admitted, row, now }
}

describe("admitRecipientSend", () => {
  it("three an hour: three pass, the fourth waits until the first is an hour old", () => {
    const hourly = { limit: 3, periodMs: 3_600_000 }
    let row: ReadonlyArray<number> = []
    for (const at of [0, 60_000, 120_000]) {
      const send = admitRecipientSend(row, at, hourly)
      expect(send.allowed).toBe(true)
      if (send.allowed) row = send.sent
    }
    expect(admitRecipientSend(row, 600_000, hourly)).toEqual({ allowed: false, retryAfterMs: 3_000_000 })
    expect(admitRecipientSend(row, 3_599_999, hourly).allowed).toBe(false)
    expect(admitRecipientSend(row, 3_600_000, hourly)).toEqual({ allowed: true, sent: [60_000, 120_000, 3_600_000] })
  })

  it.prop("no window of the period ever holds more than the limit's sends", [rule, moment, attempts], ([limits, start, gaps]) => {
    const { admitted } = run(start, gaps, limits)
    admitted.forEach((from, i) => {
      const within = admitted.slice(i).filter((at) => at < from + limits.periodMs)
      expect(within.length).toBeLessThanOrEqual(limits.limit)
    })
  })

  it.prop("a send is refused only when the limit's sends already fall in the period before it", [rule, moment, attempts], ([limits, start, gaps]) => {
    // The model: every allowed send kept for ever, and counted at each attempt.
    let row: ReadonlyArray<number> = []
    const all: Array<number> = []
    let now = start
    for (const gap of gaps) {
      now += gap
      const recent = all.filter((at) => at > now - limits.periodMs).length
      const send = admitRecipientSend(row, now, limits)
      expect(send.allowed).toBe(recent < limits.limit)
      if (send.allowed) {
        row = send.sent
        all.push(now)
      }
    }
  })

  it.prop("a row never holds more than the limit's times, oldest first", [rule, moment, attempts], ([limits, start, gaps]) => {
    const { row } = run(start, gaps, limits)
    expect(row.length).toBeLessThanOrEqual(limits.limit)
    expect([...row].sort((a, b) => a - b)).toEqual(row)
  })

  it.prop(
    "Retry-After is honest: more than 0, at most a period, too soon a millisecond before it, allowed at it",
    [rule, moment.chain((now) => FastCheck.tuple(FastCheck.constant(now), someSends(now)))],
    ([limits, [now, sent]]) => {
      const send = admitRecipientSend(sent, now, limits)
      if (send.allowed) return
      const live = liveSends(sent, now, limits.periodMs)
      expect(send.retryAfterMs).toBeGreaterThan(0)
      // A time ahead of this clock may hold a slot up to its own period from now; never longer.
      expect(send.retryAfterMs).toBeLessThanOrEqual(limits.periodMs + Math.max(0, Math.max(...live) - now))
      expect(admitRecipientSend(sent, now + send.retryAfterMs - 1, limits).allowed).toBe(false)
      expect(admitRecipientSend(sent, now + send.retryAfterMs, limits).allowed).toBe(true)
    }
  )

  it.prop("the refusal's whole seconds are enough: asking again after Retry-After passes", [rule, moment.chain((now) => FastCheck.tuple(FastCheck.constant(now), someSends(now)))], ([limits, [now, sent]]) => {
    const send = admitRecipientSend(sent, now, limits)
    if (send.allowed) return
    const error = overRecipientLimit("email", send.retryAfterMs)
    expect(error.retryAfter).toBeGreaterThanOrEqual(1)
    expect(admitRecipientSend(sent, now + error.retryAfter! * 1000, limits).allowed).toBe(true)
  })

  it.prop("times ahead of the clock still count: a lagging instance admits no more than the one ahead", [rule, moment, FastCheck.integer({ min: 1, max: 8 })], ([limits, now, ahead]) => {
    const future = Array.from({ length: limits.limit }, (_, i) => now + ahead + i)
    expect(admitRecipientSend(future, now, limits).allowed).toBe(false)
  })

  it.prop("a limit under one refuses everything, for a period", [moment, FastCheck.integer({ min: 1, max: 1000 })], ([now, periodMs]) => {
    expect(admitRecipientSend([], now, { limit: 0, periodMs })).toEqual({ allowed: false, retryAfterMs: periodMs })
  })
})

describe("giveBackRecipientSend and recipientRowExpiry", () => {
  it.prop("giving back the send just admitted leaves the same decisions as before it", [rule, moment.chain((now) => FastCheck.tuple(FastCheck.constant(now), someSends(now)))], ([limits, [now, sent]]) => {
    const send = admitRecipientSend(sent, now, limits)
    if (!send.allowed) return
    const back = giveBackRecipientSend(send.sent, now)
    expect(back.length).toBe(send.sent.length - 1)
    expect(liveSends(back, now, limits.periodMs)).toEqual(liveSends(sent, now, limits.periodMs))
  })

  it("gives back one of two sends of the same millisecond, and nothing for a time it does not hold", () => {
    expect(giveBackRecipientSend([5, 7, 7], 7)).toEqual([5, 7])
    expect(giveBackRecipientSend([5, 7], 6)).toEqual([5, 7])
  })

  it.prop("from its expiry on, a row decides what no row would", [rule, moment.chain((now) => FastCheck.tuple(FastCheck.constant(now), someSends(now).filter((s) => s.length > 0))), FastCheck.nat(1_000_000)], ([limits, [, sent], after]) => {
    const at = recipientRowExpiry(sent, limits.periodMs) + after
    expect(liveSends(sent, at, limits.periodMs)).toEqual([])
    expect(admitRecipientSend(sent, at, limits)).toEqual(admitRecipientSend([], at, limits))
  })
})

describe("recipientKey", () => {
  const key = recipientDigestKey("a server secret of at least thirty-two characters")
  const local = FastCheck.stringMatching(/^[a-z0-9._-]{1,20}$/)

  it.prop("one key per mailbox however its address is cased or padded, and a digest rather than the address", [local], ([name]) => {
    const email = `${name}@example.com`
    const k = recipientKey(key, "email", email)
    expect(recipientKey(key, "email", `  ${email.toUpperCase()} `)).toBe(k)
    expect(k).toMatch(/^[A-Za-z0-9_-]{43}$/)
  })

  it.prop("one key per phone number however it is written", [FastCheck.stringMatching(/^[1-9][0-9]{7,13}$/)], ([digits]) => {
    const spaced = `+${digits.slice(0, 2)} ${digits.slice(2, 5)}-${digits.slice(5)}`
    expect(normalisedRecipient("sms", spaced)).toBe(digits)
    expect(recipientKey(key, "sms", spaced)).toBe(recipientKey(key, "sms", digits))
  })

  it.prop("different recipients, channels or secrets give different keys", [local, local], ([a, b]) => {
    if (a !== b) expect(recipientKey(key, "email", `${a}@x.io`)).not.toBe(recipientKey(key, "email", `${b}@x.io`))
    expect(recipientKey(key, "email", a)).not.toBe(recipientKey(key, "sms", a))
    expect(recipientKey(recipientDigestKey("another secret entirely, also long enough"), "email", a)).not.toBe(recipientKey(key, "email", a))
  })
})

describe("overRecipientLimit", () => {
  it("has its own code per channel, a 429 and the wait in whole seconds, rounded up", () => {
    expect(overRecipientLimit("email", 1_500)).toMatchObject({ status: 429, code: "over_email_recipient_rate_limit", retryAfter: 2 })
    expect(overRecipientLimit("sms", 1)).toMatchObject({ status: 429, code: "over_sms_recipient_rate_limit", retryAfter: 1 })
  })
})
