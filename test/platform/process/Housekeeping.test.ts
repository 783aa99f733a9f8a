import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, FastCheck, Option, TestClock } from "effect"
import {
  deleteUpToTask,
  type HousekeepingState,
  type HousekeepingTask,
  runHousekeeping,
  sweepPass,
  type SweepBatch,
  type TaskState
} from "../../../src/platform/process/Housekeeping.js"

/*
 * The runner's own rules over an in-memory state (the database's lock and table are tested in
 * test/auth/AuthHousekeeping.test.ts): which tasks are due, how a pass goes on across runs, the budget, the lock.
 */

const NOW = new Date(Date.UTC(2030, 0, 1))
const LIMITS = { budget: Duration.seconds(20), pause: Duration.zero }

/** The port kept in a map; `locked` makes every step find the lock taken. */
const memoryState = (locked = false) => {
  const saved = new Map<string, TaskState>()
  const state: HousekeepingState = {
    step: (task, batch) =>
      locked
        ? Effect.succeed(Option.none())
        : Effect.map(batch(saved.get(task) ?? { resumeAfter: null, lastRun: null }), ({ state, value }) => {
          saved.set(task, state)
          return Option.some(value)
        })
  }
  return { state, saved }
}

/** A task working off `backlog` rows, `perBatch` a batch, walking a key; each batch takes `costMs` of the clock. */
const counting = (backlog: number, perBatch: number, costMs = 0) => {
  let left = backlog
  const calls: Array<string | null> = []
  const task: HousekeepingTask = {
    name: "test/counting",
    every: Duration.minutes(10),
    batch: (_now, resumeAfter) =>
      Effect.gen(function*() {
        calls.push(resumeAfter)
        if (costMs > 0) yield* TestClock.adjust(Duration.millis(costMs))
        const deleted = Math.min(left, perBatch)
        left -= deleted
        const done = left === 0
        return { deleted, done, resumeAfter: done ? null : String(backlog - left) } satisfies SweepBatch
      })
  }
  return { task, calls }
}

describe("runHousekeeping", () => {
  it.effect("works a backlog off batch after batch, each from where the last ended", () =>
    Effect.gen(function*() {
      const { calls, task } = counting(25, 10)
      const { saved, state } = memoryState()
      const run = yield* runHousekeeping([task], state, NOW, LIMITS)
      expect(run).toEqual({ busy: false, outOfTime: false, deleted: { "test/counting": 25 } })
      expect(calls).toEqual([null, "10", "20"])
      expect(saved.get("test/counting")).toEqual({ resumeAfter: null, lastRun: NOW })
    }))

  it.effect("a task whose pass ended less than `every` ago is not due; then it is", () =>
    Effect.gen(function*() {
      const { calls, task } = counting(1, 10)
      const { state } = memoryState()
      yield* runHousekeeping([task], state, NOW, LIMITS)
      yield* runHousekeeping([task], state, new Date(NOW.getTime() + Duration.toMillis(Duration.minutes(10)) - 1), LIMITS)
      expect(calls).toEqual([null])
      yield* runHousekeeping([task], state, new Date(NOW.getTime() + Duration.toMillis(Duration.minutes(10))), LIMITS)
      expect(calls).toEqual([null, null])
    }))

  it.effect("stops when the budget is spent, and the next run goes on with the unfinished pass", () =>
    Effect.gen(function*() {
      const { calls, task } = counting(100, 10, 7_000)
      const { saved, state } = memoryState()
      const first = yield* runHousekeeping([task], state, NOW, LIMITS)
      // Batches at 0 s, 7 s and 14 s; at 21 s the 20 s budget is spent.
      expect(first).toEqual({ busy: false, outOfTime: true, deleted: { "test/counting": 30 } })
      expect(saved.get("test/counting")).toEqual({ resumeAfter: "30", lastRun: null })
      // Not due by `every`, but an unfinished pass goes on at once.
      const second = yield* runHousekeeping([task], state, new Date(NOW.getTime() + 60_000), LIMITS)
      expect(second.deleted["test/counting"]).toBe(30)
      expect(calls.slice(3, 4)).toEqual(["30"])
    }))

  it.effect("another instance holding the lock: nothing runs", () =>
    Effect.gen(function*() {
      const { calls, task } = counting(5, 10)
      const run = yield* runHousekeeping([task], memoryState(true).state, NOW, LIMITS)
      expect(run).toEqual({ busy: true, outOfTime: false, deleted: {} })
      expect(calls).toEqual([])
    }))
})

describe("deleteUpToTask", () => {
  /** A table of `backlog` rows, and a delete of at most `limit` of them, each call recorded. */
  const table = (backlog: number) => {
    let left = backlog
    const asked: Array<{ readonly limit: number; readonly deleted: number }> = []
    const deleteBatch = (_now: Date, limit: number) =>
      Effect.sync(() => {
        const deleted = Math.min(left, limit)
        left -= deleted
        asked.push({ limit, deleted })
        return deleted
      })
    return { deleteBatch, asked, left: () => left }
  }

  it.prop("a run works any backlog off in batches of at most `limit`, ending at the first that found fewer", {
    backlog: FastCheck.integer({ min: 0, max: 5_000 }),
    limit: FastCheck.integer({ min: 1, max: 700 })
  }, ({ backlog, limit }) => {
    const rows = table(backlog)
    const task = deleteUpToTask("test/upto", Duration.minutes(10), limit, rows.deleteBatch)
    const { saved, state } = memoryState()
    const run = Effect.runSync(runHousekeeping([task], state, NOW, LIMITS))
    expect(run).toEqual({ busy: false, outOfTime: false, deleted: { "test/upto": backlog } })
    expect(rows.left()).toBe(0)
    expect(rows.asked.every((call) => call.limit === limit && call.deleted <= limit)).toBe(true)
    // Full batches, then one that found fewer (none, when the backlog was a multiple of the limit).
    expect(rows.asked.length).toBe(Math.floor(backlog / limit) + 1)
    expect(saved.get("test/upto")).toEqual({ resumeAfter: null, lastRun: NOW })
  })

  it.effect("sweepPass runs a whole pass outside the runner and says how many rows went", () =>
    Effect.gen(function*() {
      const rows = table(1_234)
      expect(yield* sweepPass(deleteUpToTask("test/upto", Duration.minutes(1), 500, rows.deleteBatch), NOW)).toBe(1_234)
      expect(rows.asked.map((call) => call.deleted)).toEqual([500, 500, 234])
      const { calls, task } = counting(25, 10)
      expect(yield* sweepPass(task, NOW)).toBe(25)
      expect(calls).toEqual([null, "10", "20"])
    }))
})
