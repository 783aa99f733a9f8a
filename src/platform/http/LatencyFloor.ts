/**
 * How long a request waits after its own work, so that the branch it took cannot be told from its answer's timing.
 * Each branch of an endpoint keeps its recent durations; the slowest branch (by median) answers as soon as it is
 * done, and any other waits until as long as one of the slowest branch's recent requests took (drawn at random)
 * has passed since it started. Its answers then come at times drawn from the slowest branch's distribution (same
 * median, same spread, same tail), where a fixed floor would give them a telltale spike. Waiting out the drawn
 * duration itself, rather than the drawn duration less what its own work typically takes, matters under load: its
 * own work's scheduling noise would otherwise come on top of the drawn duration's, and shift its answers later. A
 * timer fires late, never early, and later under load, so the wait is also shortened by how late recent timers
 * fired. Recent samples follow the machine's load, which every branch shares, and which branch is slowest may differ
 * between databases and machines, so it is measured, not assumed.
 */

/**
 * How many recent durations of each branch are kept: enough that a draw is not one outlier, few enough that the
 * draws follow the load as it changes (a window lags behind a trend by half its length).
 */
export const LATENCY_SAMPLES = 32

/** No target above this: a stalled database must not make every other answer wait as long. */
export const MAX_LATENCY_FLOOR_MS = 1000

/** The recent durations with one more, the oldest dropped past LATENCY_SAMPLES. */
export const withSample = (samples: ReadonlyArray<number>, ms: number): ReadonlyArray<number> =>
  samples.length < LATENCY_SAMPLES ? [...samples, ms] : [...samples.slice(1), ms]

/** The target for a draw `u` in [0, 1): the sample it picks, capped; 0 with no samples yet. */
export const latencyFloor = (samples: ReadonlyArray<number>, u: number): number => {
  if (samples.length === 0) return 0
  const picked = samples[Math.min(samples.length - 1, Math.floor(u * samples.length))]!
  return Math.min(MAX_LATENCY_FLOOR_MS, Math.max(0, picked))
}

/** The middle of the samples (the lower middle of an even count); 0 with none. */
export const medianOf = (samples: ReadonlyArray<number>): number => {
  if (samples.length === 0) return 0
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.floor((sorted.length - 1) / 2)]!
}

/** The branch whose recent durations have the largest median; undefined with no branch measured yet. */
export const slowestBranch = (branches: ReadonlyMap<string, ReadonlyArray<number>>): string | undefined => {
  let slowest: string | undefined
  let largest = -Infinity
  for (const [branch, samples] of branches) {
    const median = medianOf(samples)
    if (samples.length > 0 && median > largest) {
      slowest = branch
      largest = median
    }
  }
  return slowest
}

/**
 * How long a branch asks its timer to wait once its own work is done: the target less the time its own work took
 * and less how late its timer typically fires.
 */
export const paddingFor = (target: number, elapsed: number, timerLateness: number): number =>
  Math.max(0, target - elapsed - timerLateness)
