import type { MachineInfo } from "../Machine.js"
import type { StatementCheck } from "../StatementCheck.js"
import { formatNumber } from "./Format.js"
import { markdownTable } from "./MarkdownTable.js"
import { mean } from "./Stats.js"
import type { RunRecord } from "./RunRecord.js"
import { statementTable } from "./StatementReport.js"
import type { ScenarioInfo, ScenarioRow } from "./Summary.js"

export interface RunSettings {
  readonly startedAt: string
  readonly commit: string
  readonly machine: MachineInfo
  readonly workers: number
  readonly warmupMs: number
  readonly durationMs: number
  readonly rounds: number
  readonly concurrency: ReadonlyArray<{ readonly title: string; readonly concurrency: number }>
}

const percent = (share: number) => `${(share * 100).toFixed(0)}%`

// Other work on a shared machine takes CPU from whichever side runs at the time; alternating spreads it, but a
// large share makes every figure of that run suspect.
const busyNote = (runs: ReadonlyArray<RunRecord>): string => {
  const share = (side: RunRecord["side"]) => {
    const of = runs.filter((r) => r.side === side)
    return of.reduce((sum, r) => sum + r.otherCpuShare, 0) / Math.max(1, of.length)
  }
  const busiest = runs.reduce((a, b) => (b.otherCpuShare > a.otherCpuShare ? b : a), runs[0]!)
  const warn = busiest.otherCpuShare > 0.1
  return `- ${warn ? "⚠ " : ""}Other processes on the machine used ${percent(share("gatehouse"))} of its CPU during Gatehouse's windows and ` +
    `${percent(share("minimal"))} during the minimal server's (at most ${percent(busiest.otherCpuShare)}, ${busiest.scenario} ${busiest.side} ` +
    `round ${busiest.round})${warn ? ": the figures are less reliable than on an idle machine" : ""}.`
}

const signIns = (runs: ReadonlyArray<RunRecord>, side: RunRecord["side"]): string =>
  formatNumber(mean(runs.filter((r) => r.side === side).map((r) => r.background!.reqPerSec)))

/** "16: POST /signup, …; 50: GET /user, …": scenarios grouped by how many requests they keep in flight. */
const concurrencyNote = (concurrency: RunSettings["concurrency"]): string =>
  [...new Set(concurrency.map((c) => c.concurrency))]
    .map((n) => `${n} for ${concurrency.filter((c) => c.concurrency === n).map((c) => c.title).join(", ")}`)
    .join("; ")

const loads = (values: ReadonlyArray<number>) => values.map((v) => v.toFixed(2)).join(" ")

/** latest.md: the table, how to read it, and what could make a figure misleading (errors, differing SQL). */
export const resultsDocument = (
  settings: RunSettings,
  rows: ReadonlyArray<ScenarioRow>,
  runs: ReadonlyArray<RunRecord>,
  scenarios: ReadonlyArray<ScenarioInfo>,
  checks: ReadonlyArray<StatementCheck>,
  memory?: string
): string => {
  const errors = runs.filter((r) => r.errors > 0)
  const processes = (side: RunRecord["side"]) =>
    [...new Set(runs.filter((r) => r.side === side && r.scenario !== "floor").map((r) => r.serverProcesses))].join("/")
  const burst = runs.filter((r) => r.background !== undefined)
  const floor = rows.find((r) => r.scenario.sides !== undefined)
  return [
    `# Gatehouse benchmark`,
    "",
    `${settings.startedAt}, commit ${settings.commit}; ${settings.machine.cpus} × ${settings.machine.cpuModel}, Node ${settings.machine.node}, ` +
      `throwaway PostgreSQL 15 (fsync off). Load average before ${loads(settings.machine.loadAverageBefore)}, after ${loads(settings.machine.loadAverageAfter)}.`,
    "",
    `Each run: ${settings.warmupMs / 1000} s warm-up, ${settings.durationMs / 1000} s measured. Sides alternate (Gatehouse, minimal, …), ` +
      `${settings.rounds} run(s) each; the figures are the means. AUTH_WORKERS=${settings.workers} for both sides: Gatehouse ran ` +
      `${processes("gatehouse")} process(es), the minimal server ${processes("minimal")} (a cluster primary counts as one).`,
    "",
    markdownTable(rows),
    "",
    `- **ratio** is Gatehouse ÷ minimal: below ×1.00 for req/s, above ×1.00 for latency and CPU, is what Gatehouse costs over the`,
    `  minimal server doing the same SQL. Server CPU covers the whole process tree; PG CPU is the postmaster and all its backends.`,
    `- Requests in flight: ${concurrencyNote(settings.concurrency)}.`,
    ...(floor === undefined ? [] : [`- ${floor.scenario.title}: "Gatehouse" is ${floor.scenario.sides!.gatehouse}, "minimal" is ${floor.scenario.sides!.minimal}.`]),
    ...burst.slice(0, 1).map((r) =>
      `- GET /user during sign-ins: the req/s and latencies are GET /user's; the CPU and statements per request are shared by ` +
      `every request in the window, GET /user and ${r.background!.name} (Gatehouse ${signIns(burst, "gatehouse")}/s, ` +
      `minimal ${signIns(burst, "minimal")}/s).`),
    `- statements/req: from the one-at-a-time check below; "~" marks a count under load, blurred by requests in flight at the`,
    `  window's edges. For GET /user during sign-ins it includes the sign-ins' statements.`,
    busyNote(runs),
    ...(errors.length === 0
      ? ["- No request failed."]
      : errors.map((r) => `- ⚠ ${r.scenario} ${r.side} round ${r.round}: ${r.errors} of ${r.requests} failed, first: ${r.firstError ?? "?"}`)),
    "",
    ...(memory === undefined ? [] : ["## Memory per process", "", memory, ""]),
    "## Statements per request",
    "",
    checks.length === 0
      ? "Not checked in this run."
      : [
        "One request at a time, counted from pg_stat_statements (BEGIN and COMMIT included); statements that also ran while",
        "both servers were idle (IAM's revocation and policy polling) are left out. `npm run bench -- --sql` lists each statement.",
        "",
        statementTable(scenarios, checks)
      ].join("\n"),
    ""
  ].join("\n")
}
