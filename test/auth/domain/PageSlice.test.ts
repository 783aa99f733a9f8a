import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { pageSlice } from "../../../src/auth/domain/PageSlice.js"

/** What the slice reads from a list of `total` rows (0 the newest), put back newest first. */
const read = (total: number, offset: number, perPage: number): ReadonlyArray<number> => {
  const slice = pageSlice(offset, perPage, total)
  if (slice === undefined) return []
  const newestFirst = Array.from({ length: total }, (_, i) => i)
  const order = slice.newestFirst ? newestFirst : [...newestFirst].reverse()
  const rows = order.slice(slice.offset, slice.offset + slice.limit)
  return slice.newestFirst ? rows : [...rows].reverse()
}

describe("pageSlice", () => {
  it.prop("reads the same rows as LIMIT perPage OFFSET offset over the list newest first", [
    FastCheck.integer({ min: 0, max: 400 }),
    FastCheck.integer({ min: 0, max: 450 }),
    FastCheck.integer({ min: 1, max: 60 })
  ], ([total, offset, perPage]) => {
    const newestFirst = Array.from({ length: total }, (_, i) => i)
    expect(read(total, offset, perPage)).toEqual(newestFirst.slice(offset, offset + perPage))
  })

  it.prop("never skips more than half the list", [
    FastCheck.integer({ min: 1, max: 10_000_000 }),
    FastCheck.integer({ min: 0, max: 10_000_000 }),
    FastCheck.integer({ min: 1, max: 1000 })
  ], ([total, offset, perPage]) => {
    const slice = pageSlice(offset, perPage, total)
    if (slice === undefined) expect(offset).toBeGreaterThanOrEqual(total)
    else expect(slice.offset).toBeLessThanOrEqual(total / 2)
  })

  it("the last page of a million reads backwards from the start; past the end reads nothing", () => {
    expect(pageSlice(999_950, 50, 1_000_000)).toEqual({ newestFirst: false, limit: 50, offset: 0 })
    expect(pageSlice(999_990, 50, 999_999)).toEqual({ newestFirst: false, limit: 9, offset: 0 })
    expect(pageSlice(0, 50, 1_000_000)).toEqual({ newestFirst: true, limit: 50, offset: 0 })
    expect(pageSlice(1_000_000, 50, 1_000_000)).toBeUndefined()
  })
})
