import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Ref, Scope, TestClock } from "effect"
import { sweepEvery } from "../../src/platform/process/SweepEvery.js"

describe("sweepEvery", () => {
  it.effect("sweeps once per interval while its scope lives, and not after", () =>
    Effect.gen(function*() {
      const count = yield* Ref.make(0)
      const scope = yield* Scope.make()
      yield* Scope.extend(sweepEvery("1 minute", "things", Ref.update(count, (n) => n + 1)), scope)
      yield* TestClock.adjust("59 seconds")
      expect(yield* Ref.get(count)).toBe(0)
      yield* TestClock.adjust("1 second")
      expect(yield* Ref.get(count)).toBe(1)
      yield* TestClock.adjust("2 minutes")
      expect(yield* Ref.get(count)).toBe(3)
      yield* Scope.close(scope, Exit.void)
      yield* TestClock.adjust("5 minutes")
      expect(yield* Ref.get(count)).toBe(3)
    }))

  it.effect("a failed sweep is logged and the next one still comes", () =>
    Effect.gen(function*() {
      const count = yield* Ref.make(0)
      yield* Effect.scoped(Effect.gen(function*() {
        yield* sweepEvery("1 minute", "things", Effect.zipRight(Ref.update(count, (n) => n + 1), Effect.fail("no database")))
        yield* TestClock.adjust("3 minutes")
      }))
      expect(yield* Ref.get(count)).toBe(3)
    }))
})
