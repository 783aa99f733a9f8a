/**
 * The time an answer must not come before, so that a request that took a cheap branch cannot be told from one
 * that did the work: as long as one of the recent working requests took, drawn at random. The cheap answers then
 * come at times drawn from the same distribution as the working ones (same median, same spread, same tail), where
 * a fixed floor would give them a telltale spike. Recent samples follow the machine's load, which both kinds share.
 */

/** How many recent durations the floor is drawn from. */
export const LATENCY_SAMPLES = 64

/** No floor above this: a stalled database must not make every cheap answer wait as long. */
export const MAX_LATENCY_FLOOR_MS = 1000

/** The recent durations with one more, the oldest dropped past LATENCY_SAMPLES. */
export const withSample = (samples: ReadonlyArray<number>, ms: number): ReadonlyArray<number> =>
  samples.length < LATENCY_SAMPLES ? [...samples, ms] : [...samples.slice(1), ms]

/** The floor for a draw `u` in [0, 1): the sample it picks, capped; 0 with no samples yet. */
export const latencyFloor = (samples: ReadonlyArray<number>, u: number): number => {
  if (samples.length === 0) return 0
  const picked = samples[Math.min(samples.length - 1, Math.floor(u * samples.length))]!
  return Math.min(MAX_LATENCY_FLOOR_MS, Math.max(0, picked))
}
