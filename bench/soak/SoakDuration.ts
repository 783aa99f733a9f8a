/** `--soak` alone: the ten minutes. */
export const DEFAULT_SOAK_MS = 10 * 60_000

/**
 * The shortest soak: the verdict fits a line to the samples of the run's second half, and a minute gives it 15 of
 * them (soakSampleIntervalMs), enough for a slope and its standard error to mean something.
 */
export const MIN_SOAK_MS = 60_000

/** The longest: a day. A longer run is a typo more often than an intent. */
export const MAX_SOAK_MS = 24 * 60 * 60_000

const UNIT_MS: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1_000 }

/**
 * The duration of `--soak=…` in milliseconds: whole numbers with a unit each, largest first ("10m", "90s", "1h",
 * "1m30s"). A bare number is refused: minutes or seconds, either reading would surprise someone.
 */
export const parseSoakDuration = (raw: string): number => {
  const text = raw.trim().toLowerCase()
  const parts = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text)
  const ms = parts === null || text === ""
    ? Number.NaN
    : [["h", parts[1]], ["m", parts[2]], ["s", parts[3]]].reduce((sum, [unit, n]) => sum + (n === undefined ? 0 : Number(n) * UNIT_MS[unit!]!), 0)
  if (!Number.isSafeInteger(ms) || ms < MIN_SOAK_MS || ms > MAX_SOAK_MS) {
    throw new Error(`--soak wants a duration from 60s to 24h with units (10m, 90s, 1h, 1m30s), got ${JSON.stringify(raw)}`)
  }
  return ms
}

/** "10 min", "90 s", "1 h 5 min": how a duration is written in the report. */
export const formatDuration = (ms: number): string => {
  const seconds = Math.round(ms / 1000)
  const [h, m, s] = [Math.floor(seconds / 3600), Math.floor((seconds % 3600) / 60), seconds % 60]
  if (h === 0 && m === 0) return `${s} s`
  if (h === 0 && s === 0) return `${m} min`
  if (h === 0 && m < 3) return `${m * 60 + s} s`
  return [h > 0 ? `${h} h` : "", m > 0 ? `${m} min` : "", s > 0 ? `${s} s` : ""].filter((p) => p !== "").join(" ")
}

/**
 * How often the server's tree is sampled: every 10 s (the figure), more often in a short run so that even a
 * one-minute soak has 30 samples; never more often than every 2 s, so the sampling (a walk of /proc per sample)
 * stays a negligible share of the machine.
 */
export const soakSampleIntervalMs = (durationMs: number): number => Math.min(10_000, Math.max(2_000, Math.round(durationMs / 60 / 1000) * 1000))

/**
 * The length of the "first minute" and "last minute" windows whose mean RSS the report compares: a minute, or a
 * third of a shorter run, so that the two windows never overlap.
 */
export const edgeWindowMs = (durationMs: number): number => Math.min(60_000, Math.floor(durationMs / 3))
