import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import type * as Tracer from "effect/Tracer"

// Effect.fn's span would record a stack trace taken inside this wrapper: nothing a reader could use.
const SPAN_OPTIONS = { captureStackTrace: false } as const

const isGeneratorFunction = (body: Function): boolean => Object.prototype.toString.call(body) === "[object GeneratorFunction]"

/**
 * `Effect.fn(name)` whose span costs nothing when nobody records spans. Effect.fn captures a stack trace on every
 * call and opens a span whatever the tracer: about 20–30 µs a call on this machine, several times a request on the hot
 * paths, while with telemetry off (the default) every span is dropped unread. A function made here opens its span
 * only while the tracer is enabled (TelemetryLive disables it when TRACING_ENABLED is off), and never captures a
 * stack. Same call shapes as Effect.fn: a generator or a function returning an Effect, and
 * pipeables applied with the call's arguments.
 */
export const traced = (name: string): Effect.fn.Gen & Effect.fn.NonGen =>
  function(body: Function, ...pipeables: ReadonlyArray<Function>) {
    const untraced: Function = isGeneratorFunction(body)
      ? (Effect.fnUntraced as Function)(body, ...pipeables)
      : function(this: unknown, ...args: ReadonlyArray<unknown>) {
        let effect = Effect.suspend(() => body.apply(this, args) as Effect.Effect<unknown, unknown, unknown>)
        for (const pipeable of pipeables) effect = pipeable(effect, ...args)
        return effect
      }
    return function(this: unknown, ...args: ReadonlyArray<unknown>) {
      const effect = untraced.apply(this, args) as Effect.Effect<unknown, unknown, unknown>
      return FiberRef.getWith(FiberRef.currentTracerEnabled, (enabled) => enabled ? Effect.withSpan(effect, name, SPAN_OPTIONS) : effect)
    }
  } as Effect.fn.Gen & Effect.fn.NonGen

/**
 * `Effect.withSpan(name, options)` opened only while the tracer is enabled, for the same reason as `traced`:
 * `options` is built only then (a parent span read from a request's headers costs something too).
 */
export const tracedSpan = (name: string, options: () => Tracer.SpanOptions = () => SPAN_OPTIONS) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  FiberRef.getWith(FiberRef.currentTracerEnabled, (enabled) => enabled ? Effect.withSpan(effect, name, options()) : effect)
