import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, FastCheck, FiberRef, Tracer } from "effect"
import { traced, tracedSpan } from "../../src/platform/Traced.js"

/** Runs `effect` under a tracer that records the name of every span opened, then the native tracer's answer. */
const recording = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const native = yield* Effect.tracer
    const names: Array<string> = []
    const tracer = Tracer.make({
      span: (name, ...rest) => {
        names.push(name)
        return native.span(name, ...rest)
      },
      context: (f) => f()
    })
    const exit = yield* Effect.exit(Effect.withTracer(effect, tracer))
    return { exit, names }
  })

const tracerOff = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.locally(effect, FiberRef.currentTracerEnabled, false)

// The same body through Effect.fn and through traced: a generator that fails on odd input, with a pipeable that
// sees the call's arguments.
const body = function*(n: number, label: string) {
  if (n % 2 !== 0) return yield* Effect.fail(`${label}: odd ${n}`)
  return `${label}: ${n / 2}`
}
const withArgs = <A, E, R>(effect: Effect.Effect<A, E, R>, n: number) => Effect.map(effect, (a) => `${String(a)} (from ${n})`)

describe("traced", () => {
  it.effect.prop("answers as Effect.fn does, with the tracer on and off", [FastCheck.integer(), FastCheck.string()], ([n, label]) =>
    Effect.gen(function*() {
      const reference = yield* Effect.exit(Effect.fn("Subject.run")(body, withArgs)(n, label))
      const on = yield* recording(traced("Subject.run")(body, withArgs)(n, label))
      const off = yield* recording(tracerOff(traced("Subject.run")(body, withArgs)(n, label)))
      expect(on.exit).toEqual(reference)
      expect(off.exit).toEqual(reference)
      expect(on.names).toEqual(["Subject.run"])
      expect(off.names).toEqual([])
    }))

  it.effect("takes a function returning an Effect, runs it when the Effect runs, and keeps `this`", () =>
    Effect.gen(function*() {
      let calls = 0
      const counter = {
        base: 40,
        add: traced("Counter.add")(function(this: { base: number }, n: number) {
          calls++
          return Effect.succeed(this.base + n)
        })
      }
      const effect = counter.add(2)
      expect(calls).toBe(0)
      const { exit, names } = yield* recording(effect)
      expect(exit).toEqual(Exit.succeed(42))
      expect(calls).toBe(1)
      expect(names).toEqual(["Counter.add"])
    }))

  it.effect("nests its spans under the caller's, and a defect in the body is a defect", () =>
    Effect.gen(function*() {
      const inner = traced("Inner.run")(function*() {
        return (yield* Effect.currentSpan).name
      })
      const outer = traced("Outer.run")(function*() {
        const parent = (yield* Effect.currentSpan).name
        return [parent, yield* inner()] as const
      })
      expect(yield* recording(outer())).toEqual({ exit: Exit.succeed(["Outer.run", "Inner.run"]), names: ["Outer.run", "Inner.run"] })
      const broken = traced("Broken.run")((): Effect.Effect<number> => {
        throw new Error("boom")
      })
      const { exit } = yield* recording(broken())
      expect(Exit.isFailure(exit) && exit.cause._tag === "Die").toBe(true)
    }))
})

describe("tracedSpan", () => {
  it.effect("opens its span only while the tracer is enabled, and builds its options only then", () =>
    Effect.gen(function*() {
      let built = 0
      const options = () => {
        built++
        return { kind: "server" as const }
      }
      const on = yield* recording(Effect.succeed(1).pipe(tracedSpan("Call", options)))
      const off = yield* recording(tracerOff(Effect.succeed(1).pipe(tracedSpan("Call", options))))
      expect(on).toEqual({ exit: Exit.succeed(1), names: ["Call"] })
      expect(off).toEqual({ exit: Exit.succeed(1), names: [] })
      expect(built).toBe(1)
    }))
})
