import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Ref from "effect/Ref"
import { latencyFloor, medianOf, paddingFor, slowestBranch, withSample } from "./LatencyFloor.js"

/** A request being timed: its endpoint, and when it started. */
export interface Timed {
  readonly key: string
  readonly startedMs: number
}

/**
 * Keeps answers of one endpoint from telling, by their timing, which branch a request took (an address with an
 * account or without one). A request starts a timer and says which branch it took when its work is done; its
 * duration joins that branch's recent samples, and it waits as LatencyFloor says: not at all on the slowest
 * branch, else until a duration drawn from the slowest's samples has passed since it started (less the timers'
 * typical lateness). The samples are this process's own: they measure its load, and losing them on a restart only leaves
 * the first few answers uneven. The draw needs no secrecy, so it comes from Effect's Random.
 */
export class EvenTiming extends Effect.Service<EvenTiming>()("platform/EvenTiming", {
  effect: Effect.gen(function*() {
    // Endpoint → branch → its recent durations; the timers' lateness is one measure for all, the event loop's.
    const samples = yield* Ref.make(new Map<string, ReadonlyMap<string, ReadonlyArray<number>>>())
    const lateness = yield* Ref.make<ReadonlyArray<number>>([])

    const record = (key: string, branch: string, ms: number) =>
      Ref.modify(samples, (all) => {
        const branches = new Map(all.get(key) ?? [])
        branches.set(branch, withSample(branches.get(branch) ?? [], ms))
        return [branches as ReadonlyMap<string, ReadonlyArray<number>>, new Map(all).set(key, branches)] as const
      })

    const start = (key: string): Effect.Effect<Timed> => Effect.map(Clock.currentTimeMillis, (startedMs) => ({ key, startedMs }))

    /** The request's work is done, on `branch`: it waits so that its answer comes as the slowest branch's would. */
    const done = (timed: Timed, branch: string): Effect.Effect<void> =>
      Effect.gen(function*() {
        const finished = yield* Clock.currentTimeMillis
        const elapsed = finished - timed.startedMs
        const branches = yield* record(timed.key, branch, elapsed)
        const slowest = slowestBranch(branches)
        if (slowest === undefined || slowest === branch) return
        const target = latencyFloor(branches.get(slowest)!, yield* Random.next)
        const wait = paddingFor(target, elapsed, medianOf(yield* Ref.get(lateness)))
        if (wait <= 0) return
        yield* Effect.sleep(wait)
        const late = (yield* Clock.currentTimeMillis) - finished - wait
        yield* Ref.update(lateness, (recent) => withSample(recent, late))
      })

    return { start, done } as const
  })
}) {}
