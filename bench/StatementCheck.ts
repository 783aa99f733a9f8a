import type { Side } from "./report/RunRecord.js"
import type { Scenario, ScenarioContext, Target } from "./scenarios/Scenario.js"
import { type StatementCalls, type StatementCounter, statementDelta } from "./StatementCounter.js"

/** Statements one side ran per request of one scenario, sequentially, background polling left out. */
export interface StatementCheck {
  readonly scenario: string
  readonly side: Side
  readonly requests: number
  readonly perRequest: number
  /** Each statement with its calls per request. */
  readonly statements: ReadonlyArray<StatementCalls>
  /** Background statements (seen while both servers were idle) that also ran meanwhile, left out of perRequest. */
  readonly background: ReadonlyArray<StatementCalls>
  /** The key paths of the last answer, to compare the two sides' response shapes. */
  readonly shape: ReadonlyArray<string>
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** "user.identities[].provider"-style paths of every key in a JSON-like value. */
export const keyPaths = (value: unknown, prefix = ""): Array<string> => {
  if (Array.isArray(value)) return value.length === 0 ? [`${prefix}[]`] : keyPaths(value[0], `${prefix}[]`)
  if (typeof value !== "object" || value === null) return [prefix]
  return Object.entries(value).flatMap(([key, v]) => keyPaths(v, prefix === "" ? key : `${prefix}.${key}`)).sort()
}

// Longer than Gatehouse's IAM cache refresh (5 s), so every periodic statement shows up once.
const IDLE_MS = 6000

/**
 * Counts, for every scenario that has a single request, the statements each side runs per request. First both
 * servers idle for a while: what runs then is background work (IAM's revocation and policy polling), recognised
 * by its statement and kept out of the per-request counts.
 */
export const checkStatements = async (options: {
  readonly scenarios: ReadonlyArray<Scenario>
  readonly targets: ReadonlyArray<Target>
  readonly context: ScenarioContext
  readonly counter: StatementCounter
  /** Sequential requests per scenario and side. */
  readonly requests: number
  readonly progress: (line: string) => void
}): Promise<Array<StatementCheck>> => {
  const { counter } = options
  options.progress(`statement check: ${IDLE_MS / 1000} s idle to recognise background statements…`)
  const idleBefore = await counter.byStatement()
  await sleep(IDLE_MS)
  const backgroundQueries = new Set(statementDelta(idleBefore, await counter.byStatement()).map((s) => s.query))

  const checks: Array<StatementCheck> = []
  for (const scenario of options.scenarios) {
    if (scenario.single === undefined) continue
    for (const target of options.targets) {
      const request = await scenario.single(target, options.context)
      await request() // first use: connections, prepared statements, caches
      const n = options.requests
      const before = await counter.byStatement()
      let last: unknown
      for (let i = 0; i < n; i++) last = await request()
      const ran = statementDelta(before, await counter.byStatement())
      const perRequest = (list: Array<StatementCalls>) => list.map((s) => ({ query: s.query, calls: s.calls / n }))
      const statements = perRequest(ran.filter((s) => !backgroundQueries.has(s.query)))
      const check: StatementCheck = {
        scenario: scenario.id,
        side: target.side,
        requests: n,
        perRequest: statements.reduce((sum, s) => sum + s.calls, 0),
        statements,
        background: perRequest(ran.filter((s) => backgroundQueries.has(s.query))),
        shape: keyPaths(last)
      }
      checks.push(check)
      options.progress(`statement check: ${scenario.id.padEnd(13)} ${target.side.padEnd(9)} ${check.perRequest.toFixed(1)} statements/request`)
    }
  }
  return checks
}
