import type { MemoryRow } from "../ProcessMemory.js"
import { formatNumber } from "./Format.js"

const mb = (value: number | undefined): string => (value === undefined ? "–" : formatNumber(value))

/**
 * RSS per process, in MB: at idle (started, before the seed) and while the scenarios ran (sampled every second:
 * the mean and the max), with the max PSS (shared pages split between the processes sharing them). "total" sums the
 * processes; "total, each page once" is the physical memory the tree holds (what a container's limit counts), where
 * the sum of RSS counts node's code, mapped by every process, once per process.
 */
export const memoryTable = (servers: ReadonlyArray<{ readonly side: string; readonly rows: ReadonlyArray<MemoryRow> }>): string =>
  [
    "| server | process | RSS idle | RSS under load, mean | RSS under load, max | PSS under load, max |",
    "|---|---|--:|--:|--:|--:|",
    ...servers.flatMap(({ rows, side }) =>
      rows.map((r) => `| ${side} | ${r.role} | ${mb(r.idleRssMb)} | ${mb(r.loadMeanRssMb)} | ${mb(r.loadMaxRssMb)} | ${mb(r.loadMaxPssMb)} |`)
    ),
    "",
    "RSS counts every page a process maps, so the total counts node's own code and data (about 40 MB, the same pages",
    "in every process) once per process. \"total, each page once\" counts each physical page of the tree once (from",
    "/proc/<pid>/pagemap, read as root; \"–\" elsewhere), as a container's memory limit charges them (it also charges the files read, in the page cache)."
  ].join("\n")
