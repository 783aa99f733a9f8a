import { MeasuredWindow, type WindowSpec } from "./load/LoadWindow.js"
import { cpus } from "node:os"
import { machineBusyTicks, treeCpu } from "./ProcessCpu.js"
import type { RunRecord, Side } from "./report/RunRecord.js"
import { summarizeLatencies } from "./report/Stats.js"
import type { Load } from "./scenarios/Scenario.js"
import type { StatementCounter } from "./StatementCounter.js"

export interface Meters {
  readonly serverPid: number
  readonly postmasterPid: number
  readonly statements: StatementCounter
  /** Clock ticks per second of the tick counts in /proc (child times, the machine's busy time). */
  readonly ticksPerSecond: number
}

interface Reading {
  readonly server: ReturnType<typeof treeCpu>
  readonly pg: ReturnType<typeof treeCpu>
  readonly load: NodeJS.CpuUsage
  readonly machine: number
  readonly statements: Promise<number>
}

const read = (meters: Meters): Reading => {
  const statements = meters.statements.total()
  // Awaited after the run; until then a failure must not count as an unhandled rejection.
  statements.catch(() => undefined)
  return {
    server: treeCpu(meters.serverPid, meters.ticksPerSecond),
    pg: treeCpu(meters.postmasterPid, meters.ticksPerSecond),
    load: process.cpuUsage(),
    machine: machineBusyTicks(),
    statements
  }
}

/** One run: the load through warm-up and window, with CPU and statement readings at the window's two ends. */
export const measure = async (
  run: { readonly scenario: string; readonly side: Side; readonly round: number },
  spec: WindowSpec,
  load: Load,
  meters: Meters
): Promise<RunRecord> => {
  const startedAt = new Date().toISOString()
  let opened: Reading | undefined
  let closed: Reading | undefined
  const window = new MeasuredWindow(spec, { onOpen: () => (opened = read(meters)), onClose: () => (closed = read(meters)) })
  let background: RunRecord["background"] | void
  try {
    background = await load.run(window, spec)
    await window.closed
  } finally {
    window.cancel()
    load.close?.()
  }
  const result = window.result()
  const [from, to] = [opened!, closed!]
  const ms = (ticks: number) => (ticks * 1000) / meters.ticksPerSecond
  const statements = (await to.statements) - (await from.statements)
  const successes = result.requests - result.errors
  // With a second load in the window (the sign-in burst), CPU and statements are shared by all its requests.
  const perRequest = (value: number) => value / Math.max(1, result.requests + (background?.requests ?? 0))
  const serverCpuMs = to.server.ms - from.server.ms
  const pgCpuMs = to.pg.ms - from.pg.ms
  const loadCpuMs = (to.load.user + to.load.system - from.load.user - from.load.system) / 1000
  // Whatever else kept the machine busy meanwhile (other users' builds and tests): a figure to distrust a run by.
  const otherCpuMs = Math.max(0, ms(to.machine - from.machine) - serverCpuMs - pgCpuMs - loadCpuMs)
  return {
    ...run,
    startedAt,
    requests: result.requests,
    errors: result.errors,
    ...(result.firstError === undefined ? {} : { firstError: result.firstError }),
    elapsedMs: result.elapsedMs,
    reqPerSec: successes / (result.elapsedMs / 1000),
    latency: summarizeLatencies(result.latenciesMs),
    serverCpuMs,
    serverCpuMsPerReq: perRequest(serverCpuMs),
    serverProcesses: to.server.processes,
    pgCpuMs,
    pgCpuMsPerReq: perRequest(pgCpuMs),
    pgProcesses: to.pg.processes,
    loadCpuMs,
    otherCpuMs,
    otherCpuShare: otherCpuMs / (result.elapsedMs * cpus().length),
    statements,
    statementsPerReq: perRequest(statements),
    ...(background ? { background } : {})
  }
}

/**
 * Load with nothing measured, before a scenario's first run on a side: V8 needs seconds of a code path before it
 * runs optimised code (Effect's HttpApi reaches full speed only after about three), and the first measured run
 * should not pay for that alone.
 */
export const warmUp = async (load: Load, ms: number): Promise<void> => {
  const spec: WindowSpec = { warmupMs: 0, durationMs: ms }
  const window = new MeasuredWindow(spec, { onOpen: () => undefined, onClose: () => undefined })
  try {
    await load.run(window, spec)
    await window.closed
  } finally {
    window.cancel()
    load.close?.()
  }
}
