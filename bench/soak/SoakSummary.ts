import { PAGES_ONCE, type ProcessReading } from "../ProcessMemory.js"
import { meanOf } from "../report/Stats.js"
import { edgeWindowMs } from "./SoakDuration.js"
import { growthVerdict, type GrowthVerdict, type Point } from "./GrowthVerdict.js"

/** One reading of the server's tree during the soak, with the load's running totals at that moment. */
export interface SoakSample {
  /** Milliseconds since the load started. */
  readonly atMs: number
  readonly processes: ReadonlyArray<ProcessReading>
  /** Requests answered so far (successes and failures), and how many of them failed. */
  readonly requests: number
  readonly failed: number
  /** The tree's physical memory with each page counted once (PageFrames), MB; undefined where not readable. */
  readonly uniqueMb?: number | undefined
}

/** One process (or "total", the whole tree) over the soak; RSS in MB. */
export interface SoakRow {
  readonly role: string
  /** Every pid seen in the role: more than one when a worker was replaced during the run. */
  readonly pids: ReadonlyArray<number>
  readonly idleMb: number | undefined
  /** Mean RSS over the first minute of load (edgeWindowMs: a third of a run shorter than three minutes). */
  readonly firstMinuteMb: number | undefined
  /** Mean RSS over the last minute. */
  readonly lastMinuteMb: number | undefined
  readonly maxMb: number | undefined
  /** lastMinuteMb − firstMinuteMb, in MB and as a share of firstMinuteMb. */
  readonly growthMb: number | undefined
  readonly growthShare: number | undefined
  readonly verdict: GrowthVerdict
}

export interface SoakSummary {
  readonly rows: ReadonlyArray<SoakRow>
  readonly samples: number
  /** Answers per second over the first and the last minute: a server that leaks often slows down too. */
  readonly firstMinutePerSec: number | undefined
  readonly lastMinutePerSec: number | undefined
}

const TOTAL = "total"

const byRoleOrder = (a: string, b: string): number =>
  a === TOTAL ? 1 : b === TOTAL ? -1 : a.localeCompare(b, "en", { numeric: true })

const row = (role: string, idleMb: number | undefined, pids: ReadonlyArray<number>, points: ReadonlyArray<Point>, runMs: number): SoakRow => {
  const window = edgeWindowMs(runMs)
  const firstMinuteMb = meanOf(points.filter((p) => p.atMs <= window).map((p) => p.mb))
  const lastMinuteMb = meanOf(points.filter((p) => p.atMs >= runMs - window).map((p) => p.mb))
  const growthMb = firstMinuteMb === undefined || lastMinuteMb === undefined ? undefined : lastMinuteMb - firstMinuteMb
  return {
    role,
    pids,
    idleMb,
    firstMinuteMb,
    lastMinuteMb,
    maxMb: points.length === 0 ? undefined : Math.max(...points.map((p) => p.mb)),
    growthMb,
    growthShare: growthMb === undefined || firstMinuteMb === undefined || firstMinuteMb === 0 ? undefined : growthMb / firstMinuteMb,
    verdict: growthVerdict(points, runMs)
  }
}

/** Answers per second between two samples (or the load's start, when `from` is undefined). */
const rate = (from: SoakSample | undefined, to: SoakSample | undefined): number | undefined => {
  if (to === undefined) return undefined
  const [atMs, requests] = from === undefined ? [0, 0] : [from.atMs, from.requests]
  return to.atMs > atMs ? ((to.requests - requests) * 1000) / (to.atMs - atMs) : undefined
}

/**
 * The soak's rows: each role seen at idle or under load (primary, worker-1, …, or single), then "total", the sum of
 * the tree's processes in each sample, each with its idle RSS, first- and last-minute means, max, growth and verdict.
 * `samples` in the order taken; `runMs` is the load's length.
 */
export const summarizeSoak = (
  idle: ReadonlyArray<ProcessReading>,
  samples: ReadonlyArray<SoakSample>,
  runMs: number,
  idleUniqueMb?: number
): SoakSummary => {
  const roles = [...new Set([...idle, ...samples.flatMap((s) => s.processes)].map((p) => p.role))].sort(byRoleOrder)
  const rows = roles.map((role) => {
    const readings = samples.flatMap((s) => s.processes.filter((p) => p.role === role).map((p) => ({ atMs: s.atMs, reading: p })))
    const pids = [...new Set([...idle.filter((p) => p.role === role), ...readings.map((r) => r.reading)].map((p) => p.pid))]
    return row(role, idle.find((p) => p.role === role)?.rssMb, pids, readings.map((r) => ({ atMs: r.atMs, mb: r.reading.rssMb })), runMs)
  })
  const sum = (processes: ReadonlyArray<ProcessReading>) => processes.reduce((a, p) => a + p.rssMb, 0)
  const total = row(
    TOTAL,
    idle.length === 0 ? undefined : sum(idle),
    [...new Set([...idle, ...samples.flatMap((s) => s.processes)].map((p) => p.pid))],
    samples.filter((s) => s.processes.length > 0).map((s) => ({ atMs: s.atMs, mb: sum(s.processes) })),
    runMs
  )
  const unique = samples.flatMap((s) => (s.uniqueMb === undefined ? [] : [{ atMs: s.atMs, mb: s.uniqueMb }]))
  const pagesOnce = idleUniqueMb === undefined && unique.length === 0 ? [] : [row(PAGES_ONCE, idleUniqueMb, total.pids, unique, runMs)]
  const window = edgeWindowMs(runMs)
  const last = samples.at(-1)
  return {
    rows: [...rows, total, ...pagesOnce],
    samples: samples.length,
    firstMinutePerSec: rate(undefined, samples.filter((s) => s.atMs <= window).at(-1)),
    lastMinutePerSec: rate(samples.filter((s) => s.atMs <= runMs - window).at(-1), last)
  }
}
