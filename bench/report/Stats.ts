/** Latency figures of one measured window, in milliseconds. */
export interface LatencySummary {
  readonly count: number
  readonly mean: number
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly max: number
}

/**
 * The p-th percentile (0 < p <= 100) of values sorted ascending, by nearest rank: the smallest value that at
 * least p% of the values do not exceed. Nearest rank never invents a latency that no request had.
 */
export const percentile = (sorted: ArrayLike<number>, p: number): number => {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!
}

export const mean = (values: ReadonlyArray<number>): number =>
  values.length === 0 ? Number.NaN : values.reduce((sum, v) => sum + v, 0) / values.length

/** The mean, or undefined for no values (a table cell left empty rather than NaN). */
export const meanOf = (values: ReadonlyArray<number>): number | undefined => (values.length === 0 ? undefined : mean(values))

export const summarizeLatencies = (latenciesMs: ReadonlyArray<number>): LatencySummary => {
  // A typed array sorts numerically (Array#sort would compare strings) and fast for 10^5 values.
  const sorted = Float64Array.from(latenciesMs).sort()
  return {
    count: sorted.length,
    mean: mean(latenciesMs),
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1]!
  }
}

/** Ours over the minimal server's; NaN when either is missing or the minimal one is zero (no meaningful ratio). */
export const ratio = (ours: number, minimal: number): number =>
  Number.isFinite(ours) && Number.isFinite(minimal) && minimal !== 0 ? ours / minimal : Number.NaN
