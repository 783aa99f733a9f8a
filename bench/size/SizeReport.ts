import { formatNumber, formatRatio } from "../report/Format.js"
import type { RunRecord } from "../report/RunRecord.js"
import { mean, ratio } from "../report/Stats.js"

/** The bar: at a million users each scenario within 1.25× of its CPU and p99 at 200 users. */
export const SIZE_BAR = 1.25

export type Phase = "small" | "large"

export interface SizeRun {
  readonly phase: Phase
  readonly record: RunRecord
}

export interface PhaseFigures {
  readonly reqPerSec: number
  /** Server plus PostgreSQL CPU per answer: what the size table compares. */
  readonly cpuMsPerReq: number
  readonly p99Ms: number
  readonly errors: number
}

export interface SizeRow {
  readonly id: string
  readonly title: string
  readonly small: PhaseFigures | undefined
  readonly large: PhaseFigures | undefined
  readonly cpuRatio: number
  readonly p99Ratio: number
  /** Both ratios within the bar and no failed request at either size; undefined when a phase is missing. */
  readonly met: boolean | undefined
}

const figures = (runs: ReadonlyArray<RunRecord>): PhaseFigures | undefined =>
  runs.length === 0
    ? undefined
    : {
      reqPerSec: mean(runs.map((r) => r.reqPerSec)),
      cpuMsPerReq: mean(runs.map((r) => r.serverCpuMsPerReq + r.pgCpuMsPerReq)),
      p99Ms: mean(runs.map((r) => r.latency.p99)),
      errors: runs.reduce((n, r) => n + r.errors, 0)
    }

/** Each scenario's two sizes side by side (means over rounds), in the order given. */
export const sizeRows = (
  scenarios: ReadonlyArray<{ readonly id: string; readonly title: string }>,
  runs: ReadonlyArray<SizeRun>
): ReadonlyArray<SizeRow> =>
  scenarios.map(({ id, title }) => {
    const of = (phase: Phase) => figures(runs.filter((r) => r.phase === phase && r.record.scenario === id).map((r) => r.record))
    const small = of("small")
    const large = of("large")
    const cpuRatio = ratio(large?.cpuMsPerReq ?? Number.NaN, small?.cpuMsPerReq ?? Number.NaN)
    const p99Ratio = ratio(large?.p99Ms ?? Number.NaN, small?.p99Ms ?? Number.NaN)
    const met = small === undefined || large === undefined
      ? undefined
      : cpuRatio <= SIZE_BAR && p99Ratio <= SIZE_BAR && small.errors === 0 && large.errors === 0
    return { id, title, small, large, cpuRatio, p99Ratio, met }
  })

const cell = (f: PhaseFigures | undefined, pick: (f: PhaseFigures) => number) => (f === undefined ? "–" : formatNumber(pick(f)))

export const sizeTable = (rows: ReadonlyArray<SizeRow>, labels: Record<Phase, string>): string => {
  const header = [
    "Scenario",
    `req/s (${labels.small} / ${labels.large})`,
    `CPU ms/req, server + PG (${labels.small} / ${labels.large})`,
    "CPU ratio",
    `p99 ms (${labels.small} / ${labels.large})`,
    "p99 ratio",
    `within ×${SIZE_BAR}`
  ]
  const lines = rows.map((r) => [
    r.title,
    `${cell(r.small, (f) => f.reqPerSec)} / ${cell(r.large, (f) => f.reqPerSec)}`,
    `${cell(r.small, (f) => f.cpuMsPerReq)} / ${cell(r.large, (f) => f.cpuMsPerReq)}`,
    formatRatio(r.cpuRatio),
    `${cell(r.small, (f) => f.p99Ms)} / ${cell(r.large, (f) => f.p99Ms)}`,
    formatRatio(r.p99Ratio),
    r.met === undefined ? "–" : r.met ? "yes" : `**no**${(r.small?.errors ?? 0) + (r.large?.errors ?? 0) > 0 ? " (failed requests)" : ""}`
  ])
  return [header, header.map((_, i) => (i === 0 ? "---" : "---:")), ...lines].map((l) => `| ${l.join(" | ")} |`).join("\n")
}
