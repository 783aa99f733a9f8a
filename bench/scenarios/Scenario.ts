import type { BenchOptions } from "../BenchOptions.js"
import type { HttpTarget } from "../load/HttpClient.js"
import type { MeasuredWindow, WindowSpec } from "../load/LoadWindow.js"
import type { RunRecord, Side } from "../report/RunRecord.js"
import type { ScenarioInfo } from "../report/Summary.js"
import type { Seeded } from "../Seed.js"

/** One side's server, as the load sees it. */
export interface Target {
  readonly side: Side
  readonly http: HttpTarget
  /** host:port of its gRPC listener. */
  readonly grpc: string
}

export interface ScenarioContext {
  readonly options: BenchOptions
  readonly seeded: Seeded
  /** Where set-up outside the measured window (fresh refresh tokens, an IAM token) is made: always Gatehouse. */
  readonly gatehouse: Target
}

/** A load, set up and ready: `run` drives it until the window closes. */
export interface Load {
  /** A second load in the same window (the burst behind GET /user) reports its own figures here. */
  readonly run: (window: MeasuredWindow, spec: WindowSpec) => Promise<RunRecord["background"] | void>
  readonly close?: () => void
}

export interface Scenario extends ScenarioInfo {
  /** Requests in flight at once. */
  readonly concurrency: (options: BenchOptions) => number
  /** Served by the framework-floor hello servers, not by Gatehouse and the minimal server. */
  readonly floor?: boolean
  /** Sets up a run (outside the measured window) and returns its load. */
  readonly load: (target: Target, context: ScenarioContext) => Promise<Load>
  /**
   * For the statement check: sets up (outside the counted interval) and returns one request of this scenario,
   * which answers a JSON-like value so the two sides' response shapes can be compared.
   */
  readonly single?: (target: Target, context: ScenarioContext) => Promise<() => Promise<unknown>>
}

/** A tag no earlier run used, for addresses that must be new (sign-ups). */
export const uniqueTag = (side: Side): string => `${side}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`
