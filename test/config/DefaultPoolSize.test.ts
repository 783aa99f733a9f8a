import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { defaultPoolSize } from "../../src/config/DefaultPoolSize.js"

describe("DB_MAX_POOL_SIZE's default, per worker", () => {
  it("is 10 for up to six workers, then a share of 60, at least 1", () => {
    expect([1, 2, 4, 6, 7, 8, 12, 16, 32, 60, 61, 1024].map(defaultPoolSize)).toStrictEqual([10, 10, 10, 10, 8, 7, 5, 3, 1, 1, 1, 1])
  })

  it.prop("is a whole number from 1 to 10, never more for more workers", {
    workers: FastCheck.integer({ min: 1, max: 1024 }),
    more: FastCheck.integer({ min: 0, max: 1024 })
  }, ({ more, workers }) => {
    const size = defaultPoolSize(workers)
    expect(Number.isInteger(size) && size >= 1 && size <= 10).toBe(true)
    expect(defaultPoolSize(workers + more)).toBeLessThanOrEqual(size)
  })

  it.prop("keeps up to 60 workers' pools together within 60 connections, so that with each worker's LISTEN connection up to 37 workers fit PostgreSQL's default 100 (3 reserved)", {
    workers: FastCheck.integer({ min: 1, max: 60 })
  }, ({ workers }) => {
    expect(workers * defaultPoolSize(workers)).toBeLessThanOrEqual(60)
    if (workers <= 37) expect(workers * (defaultPoolSize(workers) + 1)).toBeLessThanOrEqual(97)
  })
})
