/**
 * How long a request that took a cheap branch waits, so that it cannot be told from one that did the work. The
 * target is as long as one of the recent working requests took, drawn at random: the cheap answers then come at
 * times drawn from the working ones' distribution (same median, same spread, same tail), where a fixed floor would
 * give them a telltale spike. The cheap branch's own work is not free either, so it waits the target less what its
 * own work typically takes: waiting for the target from its start instead (the later of the two) would put it
 * behind the working answers whenever its own work is close to theirs. A timer fires late, never early, and later
 * under load, so the wait is also shortened by how late recent timers fired. Recent samples follow the machine's
 * load, which both kinds share.
 */

/** How many recent durations of each kind are kept. */
export const LATENCY_SAMPLES = 64

/** No target above this: a stalled database must not make every cheap answer wait as long. */
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

/**
 * How long a cheap branch asks its timer to wait once its own work is done: the target less what its own work
 * typically takes and less how late its timer typically fires.
 */
export const paddingFor = (target: number, ownTypical: number, timerLateness: number): number =>
  Math.max(0, target - ownTypical - timerLateness)
