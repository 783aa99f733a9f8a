import type { CgroupReading } from "../MemoryCgroup.js"
import { formatNumber } from "../report/Format.js"
import { FLOOR_MB, FLOOR_SHARE } from "./GrowthVerdict.js"
import { formatDuration } from "./SoakDuration.js"
import type { KindCounts, SoakKind } from "./SoakLoad.js"
import { PAGES_ONCE } from "../ProcessMemory.js"
import type { SoakRow, SoakSummary } from "./SoakSummary.js"

const mb = (value: number | undefined): string => (value === undefined ? "–" : formatNumber(value))

const signed = (value: number | undefined, text: (v: number) => string): string =>
  value === undefined || !Number.isFinite(value) ? "–" : `${value >= 0 ? "+" : "−"}${text(Math.abs(value))}`

/** The verdict's words: what the issue asks of each process and of the tree. */
export const verdictText = (row: SoakRow): string => {
  const replaced = row.pids.length > 1 && row.role !== "total" && row.role !== PAGES_ONCE ? ` (replaced during the run: pids ${row.pids.join(", ")})` : ""
  const words = row.verdict.kind === "flat"
    ? "no growth beyond noise"
    : row.verdict.kind === "growing"
    ? "**growing**"
    : "too few samples"
  return `${words}${replaced}`
}

/** The trend the verdict judged, as "+1.2 (tolerance 5.0, noise 2.1)". */
const trendText = (row: SoakRow): string =>
  Number.isFinite(row.verdict.trendMb)
    ? `${signed(row.verdict.trendMb, formatNumber)} (tolerance ${formatNumber(row.verdict.toleranceMb)}, noise ±${formatNumber(row.verdict.noiseMb)})`
    : "–"

export const soakTable = (rows: ReadonlyArray<SoakRow>, edgeLabel: string): string => {
  const header = [
    "process",
    "pid",
    "RSS idle",
    `mean, first ${edgeLabel}`,
    `mean, last ${edgeLabel}`,
    "max",
    "growth MB",
    "growth %",
    "late trend over the run, MB",
    "verdict"
  ]
  const tree = (r: SoakRow) => r.role === "total" || r.role === PAGES_ONCE
  const lines = rows.map((r) => [
    r.role === "total" ? "**whole tree**" : r.role === PAGES_ONCE ? "**whole tree, each page once**" : r.role,
    tree(r) ? "" : r.pids.join(", "),
    mb(r.idleMb),
    mb(r.firstMinuteMb),
    mb(r.lastMinuteMb),
    mb(r.maxMb),
    signed(r.growthMb, formatNumber),
    signed(r.growthShare, (v) => `${(v * 100).toFixed(1)} %`),
    trendText(r),
    verdictText(r)
  ])
  return [header, header.map((_, i) => (i < 2 || i === 9 ? "---" : "---:")), ...lines].map((l) => `| ${l.join(" | ")} |`).join("\n")
}

const KIND_TITLES: Readonly<Record<SoakKind, string>> = {
  user: "GET /user",
  refresh: "refresh grants",
  signup: "sign-ups"
}

/** What is in flight of each kind, in words: "6 GET /user", "3 refresh chains", "1 sign-up". */
const inFlight = (kind: SoakKind, n: number): string =>
  kind === "user" ? `${n} GET /user` : kind === "refresh" ? `${n} refresh chain${n === 1 ? "" : "s"}` : `${n} sign-up${n === 1 ? "" : "s"}`

/** The issue's soak: a shorter one's second half may still be the server's warm-up. */
const FULL_SOAK_MS = 10 * 60_000

export interface SoakDocument {
  readonly startedAt: string
  readonly commit: string
  readonly durationMs: number
  readonly sampleIntervalMs: number
  readonly edgeWindowMs: number
  readonly workers: number
  readonly mix: Readonly<Record<SoakKind, number>>
  readonly summary: SoakSummary
  readonly counts: Readonly<Record<SoakKind, KindCounts>>
  readonly chainRestarts: number
  readonly loadAverage: { readonly before: ReadonlyArray<number>; readonly after: ReadonlyArray<number> }
  /** With --memory-limit: the server's memory cgroup, read at idle and after the load. */
  readonly cgroup?: { readonly idle: CgroupReading; readonly after: CgroupReading }
}

const count = (value: number | undefined): string => (value === undefined ? "not reported by this kernel" : String(value))

/** The limited soak's paragraph: the limit, what the group was charged (idle, after the load, its peak), the kills. */
export const cgroupText = ({ after, idle }: { readonly idle: CgroupReading; readonly after: CgroupReading }): string =>
  `- In a memory cgroup limited to ${after.limitMb} MB (what \`docker run --memory=${after.limitMb}m\` sets), the server ` +
  `on a private copy of node, so that its code pages are charged to it as in a fresh container: charged ` +
  `${mb(idle.currentMb)} MB at idle (anonymous ${mb(idle.anonMb)}, page cache ${mb(idle.fileMb)}) and ${mb(after.currentMb)} MB ` +
  `after the load (anonymous ${mb(after.anonMb)}, page cache ${mb(after.fileMb)}); the most at once, start-up included: ` +
  `${mb(after.peakMb)} MB${after.peakMb !== undefined && after.peakMb >= after.limitMb ? " (the limit: the kernel reclaimed page cache to make room)" : ""}; ` +
  `processes killed for want of memory: ${count(after.oomKills)}.`

/** The soak's markdown: settings, the RSS table, the requests, and the rule the verdicts follow. */
export const soakDocument = (d: SoakDocument): string => {
  const kinds = Object.keys(KIND_TITLES) as Array<SoakKind>
  const requests = kinds.reduce((n, k) => n + d.counts[k].requests, 0)
  const failed = kinds.reduce((n, k) => n + d.counts[k].failed, 0)
  const firstError = kinds.map((k) => d.counts[k].firstError).find((e) => e !== undefined)
  const edge = d.edgeWindowMs === 60_000 ? "minute" : formatDuration(d.edgeWindowMs)
  const tree = d.summary.rows.find((r) => r.role === "total")
  const pagesOnce = d.summary.rows.find((r) => r.role === PAGES_ONCE)
  return [
    "# Gatehouse soak",
    "",
    `${d.startedAt}, commit ${d.commit}. Gatehouse alone in production mode at its default settings ` +
    `(${d.workers} worker(s), the default pool and log level) on PostgreSQL 15, under ${formatDuration(d.durationMs)} of steady mixed load: ` +
    kinds.map((k) => inFlight(k, d.mix[k])).join(", ") + " in flight (each refresh presents the token the previous one of its chain answered). " +
    `RSS of each process of the server's tree every ${formatDuration(d.sampleIntervalMs)} (${d.summary.samples} samples), in MB. ` +
    `Load average before ${d.loadAverage.before.map((l) => l.toFixed(2)).join(" ")}, after ${d.loadAverage.after.map((l) => l.toFixed(2)).join(" ")}.`,
    "",
    soakTable(d.summary.rows, edge),
    "",
    `- Requests: ${requests} answered, ${failed} failed` + (firstError === undefined ? "" : ` (first: ${firstError})`) + "; " +
    kinds.map((k) => `${KIND_TITLES[k]} ${d.counts[k].requests}${d.counts[k].failed > 0 ? ` (${d.counts[k].failed} failed)` : ""}`).join(", ") +
    (d.chainRestarts > 0 ? `; ${d.chainRestarts} refresh chain(s) started again after a failure` : "") + ".",
    `- Answers per second: ${mb(d.summary.firstMinutePerSec)} over the first ${edge}, ${mb(d.summary.lastMinutePerSec)} over the last.`,
    `- Whole tree: ${tree === undefined ? "–" : verdictText(tree)}.`,
    ...(d.cgroup === undefined ? [] : [cgroupText(d.cgroup)]),
    ...(pagesOnce === undefined
      ? []
      : [`- Whole tree with each physical page counted once (/proc/<pid>/pagemap; the sum of RSS counts node's own code, ` +
        `the same pages in every process, once per process): ${verdictText(pagesOnce)}.`]),
    "",
    `Growth is the last ${edge}'s mean less the first ${edge}'s. The verdict reads the second half of the run only ` +
    `(the first minutes of load grow any Node process as V8 optimises and the heap finds its size): a least-squares line ` +
    `through those samples, its slope times the run's length ("late trend"), is growth when it exceeds both the tolerance, ` +
    `max(${FLOOR_MB} MB, ${FLOOR_SHARE * 100} % of the process's level), and the noise, two standard errors of that trend. ` +
    `Otherwise: no growth beyond noise.` +
    (d.durationMs < FULL_SOAK_MS
      ? ` A run shorter than ten minutes may still be warming up in its second half (see the answers per second): ` +
        `read its verdicts as a check of the harness, not of the server.`
      : ""),
    ""
  ].join("\n")
}
