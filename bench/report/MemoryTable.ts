import type { MemoryRow } from "../ProcessMemory.js"
import { formatNumber } from "./Format.js"

const mb = (value: number | undefined): string => (value === undefined ? "–" : formatNumber(value))

/**
 * RSS per process, in MB: at idle (started, before the seed) and while the scenarios ran (sampled every second:
 * the mean and the max), with the max PSS (shared pages split between the processes sharing them).
 */
export const memoryTable = (servers: ReadonlyArray<{ readonly side: string; readonly rows: ReadonlyArray<MemoryRow> }>): string =>
  [
    "| server | process | RSS idle | RSS under load, mean | RSS under load, max | PSS under load, max |",
    "|---|---|--:|--:|--:|--:|",
    ...servers.flatMap(({ rows, side }) =>
      rows.map((r) => `| ${side} | ${r.role} | ${mb(r.idleRssMb)} | ${mb(r.loadMeanRssMb)} | ${mb(r.loadMaxRssMb)} | ${mb(r.loadMaxPssMb)} |`)
    )
  ].join("\n")
