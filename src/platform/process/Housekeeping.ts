import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import type * as Scope from "effect/Scope"

/**
 * What one batch of a sweep did. `done`: the pass over the task's rows is complete (the next pass begins at the next
 * due run); otherwise it goes on from `resumeAfter` (a task that walks a key in ranges) or from wherever its next
 * batch finds rows (a task that deletes up to a limit, with `resumeAfter` null).
 */
export interface SweepBatch {
  readonly deleted: number
  readonly done: boolean
  readonly resumeAfter: string | null
}

/**
 * One table's clean-up, contributed by the feature that owns the table. `batch` deletes at most a bounded number of
 * rows in short statements, judged at `now` (the run's time, handed in so that a test can sweep at its own clock).
 */
export interface HousekeepingTask {
  readonly name: string
  /** How often a pass begins; an unfinished pass goes on at every run. */
  readonly every: Duration.Duration
  readonly batch: (now: Date, resumeAfter: string | null) => Effect.Effect<SweepBatch>
}

/**
 * A task that deletes at most `limit` rows of each of its statements in a batch (`deleteBatch` is handed the limit,
 * judged at `now`, and says how many rows it deleted in all), its pass done at the first batch that deleted fewer
 * than `limit`: then no statement of it found a full share, so none has rows left. A batch of several statements may
 * thus take one batch more than it needs, never one less.
 */
export const deleteUpToTask = (
  name: string,
  every: Duration.Duration,
  limit: number,
  deleteBatch: (now: Date, limit: number) => Effect.Effect<number>
): HousekeepingTask => ({
  name,
  every,
  batch: (now) => Effect.map(deleteBatch(now, limit), (deleted): SweepBatch => ({ deleted, done: deleted < limit, resumeAfter: null }))
})

/**
 * One whole pass of a task at `now`, batch after batch, outside the runner (no lock, no budget, no saved state): a
 * service's own `sweep` and the tests use it. The rows it deleted.
 */
export const sweepPass = (task: HousekeepingTask, now: Date): Effect.Effect<number> =>
  Effect.gen(function*() {
    let deleted = 0
    let resumeAfter: string | null = null
    for (;;) {
      const batch: SweepBatch = yield* task.batch(now, resumeAfter)
      deleted += batch.deleted
      if (batch.done) return deleted
      resumeAfter = batch.resumeAfter
    }
  })

/** A task's saved state: where its unfinished pass goes on ("" for a task without a key), when its last pass ended. */
export interface TaskState {
  readonly resumeAfter: string | null
  readonly lastRun: Date | null
}

/**
 * The port to the product's database that the runner needs: `step` runs one batch in a transaction that holds the
 * product's housekeeping lock, with the task's saved state, and saves the state the batch leaves. None: another
 * instance (or worker) holds the lock right now.
 */
export interface HousekeepingState {
  readonly step: <A>(
    task: string,
    batch: (state: TaskState) => Effect.Effect<{ readonly state: TaskState; readonly value: A }>
  ) => Effect.Effect<Option.Option<A>>
}

export interface HousekeepingRun {
  /** Another instance held the lock: this run stopped at its first batch that could not take it. */
  readonly busy: boolean
  /** The run's budget ran out before every due task finished its pass (the rest goes on at the next run). */
  readonly outOfTime: boolean
  /** Rows deleted, by task. */
  readonly deleted: Readonly<Record<string, number>>
}

export interface HousekeepingLimits {
  /** Wall time one run may take, counted from its start; a pass left unfinished goes on at the next run. */
  readonly budget: Duration.Duration
  /** Between two batches, so that a backlog does not hold the database's attention in one stretch. */
  readonly pause: Duration.Duration
}

export const HOUSEKEEPING_LIMITS: HousekeepingLimits = { budget: Duration.seconds(20), pause: Duration.millis(20) }

/** About once a minute, with up to 30 s of jitter so that instances started together do not all try at once. */
export const HOUSEKEEPING_EVERY = Duration.minutes(1)
const JITTER_MILLIS = 30_000

const isDue = (task: HousekeepingTask, state: TaskState, now: Date): boolean =>
  state.resumeAfter !== null || state.lastRun === null ||
  now.getTime() - state.lastRun.getTime() >= Duration.toMillis(task.every)

const after = (state: TaskState, batch: SweepBatch, now: Date): TaskState =>
  batch.done ? { resumeAfter: null, lastRun: now } : { resumeAfter: batch.resumeAfter ?? "", lastRun: state.lastRun }

/**
 * One housekeeping run: each due task, batch after batch, until its pass is complete, the budget is spent or another
 * instance holds the lock. Each batch is its own transaction and takes the lock anew (pg_try_advisory_xact_lock), so
 * no two instances ever sweep at the same moment, a crash lets go of the lock with its transaction, and no
 * connection is held between batches: the embedded database has only one, and requests must get it in between.
 */
export const runHousekeeping = (
  tasks: ReadonlyArray<HousekeepingTask>,
  state: HousekeepingState,
  now: Date,
  limits: HousekeepingLimits = HOUSEKEEPING_LIMITS
): Effect.Effect<HousekeepingRun> =>
  Effect.gen(function*() {
    const started = yield* Clock.currentTimeMillis
    const deleted: Record<string, number> = {}
    const pauseMillis = Duration.toMillis(limits.pause)
    for (const task of tasks) {
      for (;;) {
        if ((yield* Clock.currentTimeMillis) - started >= Duration.toMillis(limits.budget)) {
          return { busy: false, outOfTime: true, deleted }
        }
        const stepped = yield* state.step(task.name, (saved) =>
          isDue(task, saved, now)
            ? Effect.map(task.batch(now, saved.resumeAfter), (batch) => ({ state: after(saved, batch, now), value: Option.some(batch) }))
            : Effect.succeed({ state: saved, value: Option.none<SweepBatch>() }))
        if (Option.isNone(stepped)) return { busy: true, outOfTime: false, deleted }
        if (Option.isNone(stepped.value)) break
        deleted[task.name] = (deleted[task.name] ?? 0) + stepped.value.value.deleted
        if (stepped.value.value.done) break
        if (pauseMillis > 0) yield* Effect.sleep(limits.pause)
      }
    }
    return { busy: false, outOfTime: false, deleted }
  })

/**
 * Housekeeping for as long as the scope lives: a run about every HOUSEKEEPING_EVERY (plus jitter) on each process.
 * The lock makes one of them sweep at a time; the others find it taken and wait for their next turn. A run that fails
 * is logged and the next comes as usual: no sweep decides an answer, so a missed one costs only space.
 */
export const housekeepingEvery = (
  tasks: ReadonlyArray<HousekeepingTask>,
  state: HousekeepingState
): Effect.Effect<void, never, Scope.Scope> =>
  Random.nextIntBetween(0, JITTER_MILLIS).pipe(
    Effect.flatMap((jitter) => Effect.sleep(Duration.sum(HOUSEKEEPING_EVERY, Duration.millis(jitter)))),
    Effect.zipRight(Effect.flatMap(Clock.currentTimeMillis, (now) => runHousekeeping(tasks, state, new Date(now)))),
    Effect.tap((run) => {
      const total = Object.values(run.deleted).reduce((sum, n) => sum + n, 0)
      return total > 0 ? Effect.logDebug("housekeeping deleted rows", run.deleted) : Effect.void
    }),
    Effect.catchAllCause((cause) => Effect.logWarning("housekeeping run failed", cause)),
    Effect.forever,
    Effect.forkScoped,
    Effect.asVoid
  )
