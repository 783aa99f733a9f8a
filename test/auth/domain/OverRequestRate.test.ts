import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { overRequestRate } from "../../../src/auth/domain/OverRequestRate.js"

describe("overRequestRate", () => {
  it.prop("is GoTrue's 429 with a Retry-After of whole seconds, rounded up, at least 1", [FastCheck.integer({ min: 1, max: 10_000_000 })], ([ms]) => {
    const error = overRequestRate(ms)
    expect([error.status, error.code, error.message]).toStrictEqual([429, "over_request_rate_limit", "Request rate limit reached"])
    expect(error.retryAfter).toBe(Math.max(1, Math.ceil(ms / 1000)))
  })
})
