import { Clock, Effect, Random, Ref } from "effect"
import { latencyFloor, withSample } from "./LatencyFloor.js"

/** A request being timed: when it started. */
export interface Timed {
  readonly key: string
  readonly startedMs: number
}

/**
 * Keeps answers of one endpoint from telling, by their timing, which branch a request took (an address with an
 * account or without one). A request starts a timer; the branch that does the work says so when it is done, and its
 * duration joins the endpoint's recent samples; the cheap branch waits as long as one of them, drawn at random
 * (LatencyFloor). The samples are this process's own: they measure its load, and losing them on a restart only
 * leaves the first few cheap answers early. The draw needs no secrecy, so it comes from Effect's Random.
 */
export class EvenTiming extends Effect.Service<EvenTiming>()("platform/EvenTiming", {
  effect: Effect.gen(function*() {
    const samples = yield* Ref.make(new Map<string, ReadonlyArray<number>>())

    const start = (key: string): Effect.Effect<Timed> => Effect.map(Clock.currentTimeMillis, (startedMs) => ({ key, startedMs }))

    /** The working branch is done: its duration becomes one of the endpoint's samples. */
    const worked = (timed: Timed): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Ref.update(samples, (all) => new Map(all).set(timed.key, withSample(all.get(timed.key) ?? [], now - timed.startedMs))))

    /** The cheap branch is done: it waits until a floor drawn from the endpoint's samples has passed since it started. */
    const padded = (timed: Timed): Effect.Effect<void> =>
      Effect.gen(function*() {
        const floor = latencyFloor((yield* Ref.get(samples)).get(timed.key) ?? [], yield* Random.next)
        const wait = timed.startedMs + floor - (yield* Clock.currentTimeMillis)
        if (wait > 0) yield* Effect.sleep(wait)
      })

    return { start, worked, padded } as const
  })
}) {}
