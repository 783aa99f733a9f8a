import type { LatencySummary } from "./Stats.js"

/** Gatehouse (or, in the framework floor, the Effect server) against the minimal server (there, node:http). */
export type Side = "gatehouse" | "minimal"

/** One measured window of one scenario against one side: the raw figures the report is computed from. */
export interface RunRecord {
  readonly scenario: string
  readonly side: Side
  readonly round: number
  readonly startedAt: string
  /** Requests completed inside the window (successes and failures). */
  readonly requests: number
  readonly errors: number
  readonly firstError?: string
  readonly elapsedMs: number
  /** Successful requests per second. */
  readonly reqPerSec: number
  /** Latencies of the successful requests. */
  readonly latency: LatencySummary
  /** CPU time of the server's process tree (primary, workers, reaped children) during the window. */
  readonly serverCpuMs: number
  readonly serverCpuMsPerReq: number
  readonly serverProcesses: number
  /** CPU time of the PostgreSQL postmaster and all its children during the window. */
  readonly pgCpuMs: number
  readonly pgCpuMsPerReq: number
  readonly pgProcesses: number
  /** CPU time of the load generator (this process) during the window. */
  readonly loadCpuMs: number
  /** CPU time the rest of the machine used during the window: none of the servers', PostgreSQL's or the load's. */
  readonly otherCpuMs: number
  /** otherCpuMs as a share of the machine's capacity over the window (0..1). */
  readonly otherCpuShare: number
  /** SQL statements executed during the window (pg_stat_statements calls, BEGIN and COMMIT included). */
  readonly statements: number
  readonly statementsPerReq: number
  /** A second load running in the same window (the sign-in burst behind GET /user); not in the figures above. */
  readonly background?: { readonly name: string; readonly requests: number; readonly errors: number; readonly reqPerSec: number }
}
