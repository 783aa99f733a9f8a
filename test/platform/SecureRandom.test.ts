import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SecureRandom } from "../../src/platform/SecureRandom.js"

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe("SecureRandom", () => {
  it.effect("Live codes have exactly the asked number of digits, leading zeros kept, and every digit occurs", () =>
    Effect.gen(function*() {
      const random = yield* SecureRandom
      const codes = yield* Effect.forEach(Array.from({ length: 200 }), () => random.digits(6))
      for (const code of codes) expect(code).toMatch(/^\d{6}$/)
      // 1,200 uniform digits: each of the ten appears (the chance one is missing is about 10 × 0.9^1200).
      expect(new Set(codes.join("")).size).toBe(10)
      // Long codes do not repeat (100 draws of 10 digits: a repeat is a one-in-two-million event).
      const long = yield* Effect.forEach(Array.from({ length: 100 }), () => random.digits(10))
      expect(new Set(long).size).toBe(100)
      expect(yield* random.uuid()).toMatch(UUID_V4)
      const tokens = yield* Effect.forEach(Array.from({ length: 100 }), () => random.bytes(32))
      for (const token of tokens) expect(token.length).toBe(32)
      expect(new Set(tokens.map((token) => token.toString("hex"))).size).toBe(100)
    }).pipe(Effect.provide(SecureRandom.Live)))

  it.effect("Test is deterministic: a counter, zero-padded, and UUIDs of the v4 shape", () =>
    Effect.gen(function*() {
      const random = yield* SecureRandom
      expect(yield* random.digits(6)).toBe("000001")
      expect(yield* random.digits(8)).toBe("00000002")
      expect(yield* random.uuid()).toBe("00000000-0000-4000-8000-000000000003")
      expect(yield* random.uuid()).toMatch(UUID_V4)
      expect(yield* random.bytes(32)).toEqual(Buffer.concat([Buffer.alloc(31), Buffer.from([5])]))
      expect(yield* random.bytes(28)).toEqual(Buffer.concat([Buffer.alloc(27), Buffer.from([6])]))
    }).pipe(Effect.provide(SecureRandom.Test)))
})
