import type { RunRecord, Side } from "./RunRecord.js"
import { mean, ratio } from "./Stats.js"

export interface ScenarioInfo {
  readonly id: string
  readonly title: string
  /** What each side is in this scenario, when not Gatehouse and the minimal server (the framework floor). */
  readonly sides?: { readonly gatehouse: string; readonly minimal: string }
}

/** The mean over the rounds of one side's runs. */
export interface SideFigures {
  readonly runs: number
  readonly reqPerSec: number
  readonly p50: number
  readonly p99: number
  readonly serverCpuMsPerReq: number
  readonly pgCpuMsPerReq: number
  /** From the sequential statement check where the scenario has one, else counted under load. */
  readonly statementsPerReq: number
  readonly statementsChecked: boolean
  /** Mean share of the machine other processes used during this side's windows (0..1). */
  readonly otherCpuShare: number
  readonly errors: number
  readonly serverProcesses: number
}

/** One table row: both sides and every figure as ours over minimal. */
export interface ScenarioRow {
  readonly scenario: ScenarioInfo
  readonly gatehouse: SideFigures
  readonly minimal: SideFigures
  readonly ratios: {
    readonly reqPerSec: number
    readonly p50: number
    readonly p99: number
    readonly serverCpuMsPerReq: number
    readonly pgCpuMsPerReq: number
  }
}

/** A statement count per request from the sequential check (StatementCheck has this shape). */
export interface CheckedStatements {
  readonly scenario: string
  readonly side: Side
  readonly perRequest: number
}

// Below a microsecond a request, CPU time is what the side did besides the requests (PostgreSQL with no query to
// run): no ratio of two such figures means anything.
const cpuRatio = (ours: number, minimal: number): number => (ours < 0.001 || minimal < 0.001 ? Number.NaN : ratio(ours, minimal))

const figures = (runs: ReadonlyArray<RunRecord>, checked: CheckedStatements | undefined): SideFigures => {
  const of = (pick: (run: RunRecord) => number) => mean(runs.map(pick))
  return {
    runs: runs.length,
    reqPerSec: of((r) => r.reqPerSec),
    p50: of((r) => r.latency.p50),
    p99: of((r) => r.latency.p99),
    serverCpuMsPerReq: of((r) => r.serverCpuMsPerReq),
    pgCpuMsPerReq: of((r) => r.pgCpuMsPerReq),
    // Under load, requests in flight at the window's edges blur the count; the sequential check is exact.
    statementsPerReq: checked?.perRequest ?? of((r) => r.statementsPerReq),
    statementsChecked: checked !== undefined,
    otherCpuShare: of((r) => r.otherCpuShare),
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
    serverProcesses: Math.max(0, ...runs.map((r) => r.serverProcesses))
  }
}

/** One row per scenario that has runs, in the order given. */
export const summarize = (
  scenarios: ReadonlyArray<ScenarioInfo>,
  runs: ReadonlyArray<RunRecord>,
  checks: ReadonlyArray<CheckedStatements> = []
): ReadonlyArray<ScenarioRow> =>
  scenarios.flatMap((scenario) => {
    const side = (s: Side) =>
      figures(runs.filter((r) => r.scenario === scenario.id && r.side === s), checks.find((c) => c.scenario === scenario.id && c.side === s))
    const gatehouse = side("gatehouse")
    const minimal = side("minimal")
    if (gatehouse.runs === 0 && minimal.runs === 0) return []
    return [{
      scenario,
      gatehouse,
      minimal,
      ratios: {
        reqPerSec: ratio(gatehouse.reqPerSec, minimal.reqPerSec),
        p50: ratio(gatehouse.p50, minimal.p50),
        p99: ratio(gatehouse.p99, minimal.p99),
        serverCpuMsPerReq: cpuRatio(gatehouse.serverCpuMsPerReq, minimal.serverCpuMsPerReq),
        pgCpuMsPerReq: cpuRatio(gatehouse.pgCpuMsPerReq, minimal.pgCpuMsPerReq)
      }
    }]
  })
