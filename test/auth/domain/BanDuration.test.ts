import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import { bannedUntil, invalidBanDurationMessage, parseBanDuration } from "../../../src/auth/domain/BanDuration.js"

const NOW = new Date(Date.UTC(2030, 0, 1))
const UNITS = [["h", 3_600_000], ["m", 60_000], ["s", 1_000], ["ms", 1]] as const

describe("parseBanDuration", () => {
  it.each([
    ["24h", 86_400_000],
    ["1h30m", 5_400_000],
    ["876000h", 876_000 * 3_600_000],
    ["1.5h", 5_400_000],
    ["300ms", 300],
    ["1500us", 1],
    ["-1h", -3_600_000]
  ])("%s bans until now + %i ms", (input, millis) => {
    const ban = Either.getOrThrow(parseBanDuration(input))
    expect(bannedUntil(ban, NOW)).toEqual(new Date(NOW.getTime() + millis))
  })

  it.each(["none", "0", "0s", "0h0m"])("%s lifts the ban", (input) => {
    expect(bannedUntil(Either.getOrThrow(parseBanDuration(input)), NOW)).toBeNull()
  })

  it.each(["", "forever", "24", "1d", "h", "1h ", "None", "9223372036854775808ns", "1.h.5"])("%j is GoTrue's 400 text", (input) => {
    expect(parseBanDuration(input)).toEqual(Either.left(invalidBanDurationMessage(input)))
  })

  it.prop("a sum of whole units bans for exactly that long", [
    FastCheck.array(FastCheck.tuple(FastCheck.integer({ min: 0, max: 10_000 }), FastCheck.constantFrom(...UNITS)), { minLength: 1, maxLength: 4 })
  ], ([parts]) => {
    const input = parts.map(([n, [unit]]) => `${n}${unit}`).join("")
    const millis = parts.reduce((sum, [n, [, ms]]) => sum + n * ms, 0)
    const until = bannedUntil(Either.getOrThrow(parseBanDuration(input)), NOW)
    expect(until).toEqual(millis === 0 ? null : new Date(NOW.getTime() + millis))
  })

  it.prop("any input is either a ban or the 400 message, never a throw or an invalid date", [FastCheck.string()], ([input]) => {
    Either.match(parseBanDuration(input), {
      onLeft: (message) => expect(message).toBe(invalidBanDurationMessage(input)),
      onRight: (ban) => {
        const until = bannedUntil(ban, NOW)
        expect(until === null || !Number.isNaN(until.getTime())).toBe(true)
      }
    })
  })
})
