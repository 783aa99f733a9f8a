import { formatNumber, formatRatio } from "./Format.js"
import type { ScenarioRow, SideFigures } from "./Summary.js"

const HEADER = [
  "Scenario",
  "Gatehouse req/s",
  "minimal req/s",
  "ratio",
  "p50 ms (G / m, ratio)",
  "p99 ms (G / m, ratio)",
  "server CPU ms/req (G / m, ratio)",
  "PG CPU ms/req (G / m, ratio)",
  "statements/req (G / m)"
]

const pair = (ours: number, minimal: number, ratio?: number): string =>
  `${formatNumber(ours)} / ${formatNumber(minimal)}${ratio === undefined ? "" : ` (${formatRatio(ratio)})`}`

// Half a statement per request apart means the two sides did not run the same SQL (the rest is background noise).
const statementsDiffer = (row: ScenarioRow): boolean =>
  Number.isFinite(row.gatehouse.statementsPerReq) && Number.isFinite(row.minimal.statementsPerReq) &&
  Math.abs(row.gatehouse.statementsPerReq - row.minimal.statementsPerReq) >= 0.5

// "~": counted under load, where requests in flight at the window's edges blur the figure.
const statements = (side: SideFigures): string => `${side.statementsChecked ? "" : "~"}${side.statementsPerReq.toFixed(1)}`

const cells = (row: ScenarioRow): ReadonlyArray<string> => [
  row.scenario.title,
  formatNumber(row.gatehouse.reqPerSec),
  formatNumber(row.minimal.reqPerSec),
  formatRatio(row.ratios.reqPerSec),
  pair(row.gatehouse.p50, row.minimal.p50, row.ratios.p50),
  pair(row.gatehouse.p99, row.minimal.p99, row.ratios.p99),
  pair(row.gatehouse.serverCpuMsPerReq, row.minimal.serverCpuMsPerReq, row.ratios.serverCpuMsPerReq),
  pair(row.gatehouse.pgCpuMsPerReq, row.minimal.pgCpuMsPerReq, row.ratios.pgCpuMsPerReq),
  `${statements(row.gatehouse)} / ${statements(row.minimal)}${statementsDiffer(row) ? " ⚠" : ""}`
]

const line = (values: ReadonlyArray<string>): string => `| ${values.map((v) => v.replaceAll("|", "\\|")).join(" | ")} |`

/** The results table: one row per scenario, every figure of Gatehouse next to the minimal server's. */
export const markdownTable = (rows: ReadonlyArray<ScenarioRow>): string =>
  [line(HEADER), line(HEADER.map((_, i) => (i === 0 ? "---" : "---:"))), ...rows.map((row) => line(cells(row)))].join("\n")
