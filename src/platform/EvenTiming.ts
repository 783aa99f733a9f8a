import { Clock, Effect, Random, Ref } from "effect"
import { latencyFloor, medianOf, paddingFor, withSample } from "./LatencyFloor.js"

// How late this process's timers fire: one measure for every endpoint, as it is the event loop's.
const LATENESS = "timer lateness"

/** A request being timed: when it started. */
export interface Timed {
  readonly key: string
  readonly startedMs: number
}

/**
 * Keeps answers of one endpoint from telling, by their timing, which branch a request took (an address with an
 * account or without one). A request starts a timer; the branch that does the work says so when it is done, and its
 * duration joins the endpoint's recent samples; a cheap branch, when done, waits a duration drawn from those samples
 * less what its own work typically takes and how late timers fire (LatencyFloor). The samples are this process's own: they measure its load,
 * and losing them on a restart only leaves the first few cheap answers early. The draw needs no secrecy, so it
 * comes from Effect's Random.
 */
export class EvenTiming extends Effect.Service<EvenTiming>()("platform/EvenTiming", {
  effect: Effect.gen(function*() {
    const samples = yield* Ref.make(new Map<string, ReadonlyArray<number>>())

    const record = (key: string, ms: number) =>
      Ref.modify(samples, (all) => {
        const updated = withSample(all.get(key) ?? [], ms)
        return [updated, new Map(all).set(key, updated)] as const
      })

    const start = (key: string): Effect.Effect<Timed> => Effect.map(Clock.currentTimeMillis, (startedMs) => ({ key, startedMs }))

    /** The working branch is done: its duration becomes one of the endpoint's samples. */
    const worked = (timed: Timed): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => record(timed.key, now - timed.startedMs))

    /** The cheap branch `branch` is done: it waits so that its answer comes as a working one would. */
    const padded = (timed: Timed, branch: string): Effect.Effect<void> =>
      Effect.gen(function*() {
        const done = yield* Clock.currentTimeMillis
        const own = yield* record(`${timed.key}/${branch}`, done - timed.startedMs)
        const all = yield* Ref.get(samples)
        const target = latencyFloor(all.get(timed.key) ?? [], yield* Random.next)
        const wait = paddingFor(target, medianOf(own), medianOf(all.get(LATENESS) ?? []))
        if (wait <= 0) return
        yield* Effect.sleep(wait)
        yield* record(LATENESS, (yield* Clock.currentTimeMillis) - done - wait)
      })

    return { start, worked, padded } as const
  })
}) {}
