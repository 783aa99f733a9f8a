/** One RSS reading: when (ms since the load started) and how much (MB). */
export interface Point {
  readonly atMs: number
  readonly mb: number
}

/** Growth under this many MB is noise whatever the process's size: a few pages of code, a GC's timing. */
export const FLOOR_MB = 5

/** …and under this share of the process's level: a worker's young generation alone moves its RSS by that much. */
export const FLOOR_SHARE = 0.03

/** Fewer samples in the second half than this, and there is no slope to speak of. */
export const MIN_POINTS = 3

export type GrowthKind = "flat" | "growing" | "too few samples"

export interface GrowthVerdict {
  readonly kind: GrowthKind
  /** The least-squares slope of the second half's samples, in MB per minute. */
  readonly slopeMbPerMin: number
  /** That slope times the run's length: the MB the late trend would add over a run as long again. */
  readonly trendMb: number
  /** max(FLOOR_MB, FLOOR_SHARE × the second half's mean): growth under it is not worth the name. */
  readonly toleranceMb: number
  /** Two standard errors of trendMb, from the scatter of the samples about their line. */
  readonly noiseMb: number
  /** Samples the line was fitted to. */
  readonly points: number
}

/** Slope and its standard error of y on x by ordinary least squares; NaN where they are undefined. */
export const leastSquares = (points: ReadonlyArray<Point>): { readonly slope: number; readonly standardError: number } => {
  const n = points.length
  if (n < 2) return { slope: Number.NaN, standardError: Number.NaN }
  const meanT = points.reduce((s, p) => s + p.atMs, 0) / n
  const meanY = points.reduce((s, p) => s + p.mb, 0) / n
  const sxx = points.reduce((s, p) => s + (p.atMs - meanT) ** 2, 0)
  if (sxx === 0) return { slope: Number.NaN, standardError: Number.NaN }
  const slope = points.reduce((s, p) => s + (p.atMs - meanT) * (p.mb - meanY), 0) / sxx
  const residuals = points.reduce((s, p) => s + (p.mb - meanY - slope * (p.atMs - meanT)) ** 2, 0)
  return { slope, standardError: n > 2 ? Math.sqrt(residuals / (n - 2) / sxx) : Number.NaN }
}

/**
 * Whether a process's RSS grew beyond noise during a soak of `runMs`. The rule:
 *
 * 1. Only the second half of the run counts. A Node process's RSS rises for its first minutes under load whatever
 *    its code does (V8 compiles and optimises, the heap grows to the size its allocation rate wants, the pool opens
 *    its connections) and then levels off; a leak is what keeps rising after that.
 * 2. Fit a straight line to those samples (least squares) and project its slope over the whole run's length: the
 *    trend, in MB, that the process would add if the run went on for as long again. On a ten-minute soak a leak of
 *    0.5 MB a minute makes 5 MB.
 * 3. The trend is growth when it is above both
 *    - the tolerance, max(5 MB, 3 % of the process's level): less is not worth the name (5 MB is a few pages of
 *      code or a GC's timing; 3 % is about what a worker's young generation moves its RSS by), and
 *    - the noise, two standard errors of the projected trend, from the samples' scatter about the line: RSS moves
 *      in steps as the garbage collector takes and gives back pages, and a slope no larger than its own error
 *      band says nothing.
 *
 * A falling trend is never growth. With samples regularly spaced, samples within ±a of a constant give a trend of
 * at most 6a (a step from −a to +a halfway through the fitted half is the worst case), so any series that stays
 * within ±0.8 MB of its level is flat whatever its pattern; the property tests hold the rule to that, and to
 * calling a steady climb of a few MB over the run growth.
 */
export const growthVerdict = (points: ReadonlyArray<Point>, runMs: number): GrowthVerdict => {
  const late = points.filter((p) => p.atMs >= runMs / 2)
  const level = late.length === 0 ? Number.NaN : late.reduce((s, p) => s + p.mb, 0) / late.length
  const toleranceMb = Math.max(FLOOR_MB, FLOOR_SHARE * (Number.isFinite(level) ? level : 0))
  const { slope, standardError } = leastSquares(late)
  const trendMb = slope * runMs
  const noiseMb = 2 * standardError * runMs
  const decided = late.length >= MIN_POINTS && Number.isFinite(trendMb) && Number.isFinite(noiseMb)
  return {
    kind: !decided ? "too few samples" : trendMb > toleranceMb && trendMb > noiseMb ? "growing" : "flat",
    slopeMbPerMin: slope * 60_000,
    trendMb,
    toleranceMb,
    noiseMb,
    points: late.length
  }
}
