import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { BenchOptions } from "../BenchOptions.js"
import type { MemoryRow } from "../ProcessMemory.js"
import type { StatementCheck } from "../StatementCheck.js"
import { resultsDocument, type RunSettings } from "./ResultsDocument.js"
import type { RunRecord } from "./RunRecord.js"
import type { ScenarioInfo, ScenarioRow } from "./Summary.js"
import { svgChart } from "./SvgChart.js"

/**
 * <timestamp>.json (everything, every run raw), latest.md and latest.svg. A smoke run (--quick) or a subset
 * (--only) writes its own files, so it never replaces the full results.
 */
export const writeResults = (dir: string, run: {
  readonly settings: RunSettings
  readonly options: BenchOptions
  readonly scenarios: ReadonlyArray<ScenarioInfo>
  readonly checks: ReadonlyArray<StatementCheck>
  readonly runs: ReadonlyArray<RunRecord>
  readonly rows: ReadonlyArray<ScenarioRow>
  /** RSS per process of each side, and its table (MemoryTable). */
  readonly memory?: { readonly servers: ReadonlyArray<{ readonly side: string; readonly rows: ReadonlyArray<MemoryRow> }>; readonly table: string }
}): ReadonlyArray<string> => {
  const { options, settings } = run
  const suffix = options.quick ? "-quick" : options.only !== undefined ? "-partial" : ""
  // ISO 8601 basic format: no ":" in a file name (a Windows checkout could not hold it).
  const stamp = settings.startedAt.replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z")
  const subtitle = `${settings.startedAt.slice(0, 16).replace("T", " ")} UTC, commit ${settings.commit}, ${settings.machine.cpus} CPUs, ` +
    `${options.workers} worker(s) per side, ${options.durationMs / 1000} s measured × ${options.rounds} round(s)`
  const files: ReadonlyArray<readonly [string, string]> = [
    [`${stamp}${suffix}.json`, JSON.stringify({ ...settings, options, statementChecks: run.checks, runs: run.runs, summary: run.rows, memory: run.memory?.servers }, null, 2) + "\n"],
    [`latest${suffix}.md`, resultsDocument(settings, run.rows, run.runs, run.scenarios, run.checks, run.memory?.table)],
    [`latest${suffix}.svg`, svgChart(run.rows, subtitle)]
  ]
  mkdirSync(dir, { recursive: true })
  for (const [name, content] of files) writeFileSync(join(dir, name), content)
  return files.map(([name]) => name)
}
