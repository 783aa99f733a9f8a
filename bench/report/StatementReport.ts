import type { StatementCheck } from "../StatementCheck.js"
import type { ScenarioInfo } from "./Summary.js"

const find = (checks: ReadonlyArray<StatementCheck>, scenario: string, side: StatementCheck["side"]) =>
  checks.find((c) => c.scenario === scenario && c.side === side)

/** Shape keys one side answers and the other does not. */
const shapeDifference = (a: StatementCheck, b: StatementCheck): Array<string> => {
  const other = new Set(b.shape)
  return a.shape.filter((key) => !other.has(key))
}

const flat = (query: string): string => query.replace(/\s+/g, " ").trim()

/** The statements and their calls per request as one comparable text. */
const fingerprint = (check: StatementCheck): string =>
  check.statements.map((s) => `${s.calls.toFixed(2)} ${flat(s.query)}`).sort().join("\n")

/**
 * "same statements" when both sides ran the same normalised statements (pg_stat_statements shows constants as $n)
 * equally often; "same count" when only the numbers agree; "⚠ differs" otherwise.
 */
const agreement = (ours: StatementCheck, minimal: StatementCheck): string =>
  fingerprint(ours) === fingerprint(minimal)
    ? "same statements"
    : Math.abs(ours.perRequest - minimal.perRequest) < 0.5
    ? "same count, other statements"
    : "⚠ differs"

/** One line per scenario: statements per request of both sides, and whether they (and the answers' keys) agree. */
export const statementTable = (scenarios: ReadonlyArray<ScenarioInfo>, checks: ReadonlyArray<StatementCheck>): string => {
  const rows = scenarios.flatMap((scenario) => {
    const ours = find(checks, scenario.id, "gatehouse")
    const minimal = find(checks, scenario.id, "minimal")
    if (ours === undefined || minimal === undefined) return []
    const onlyOurs = shapeDifference(ours, minimal)
    const onlyMinimal = shapeDifference(minimal, ours)
    const shape = onlyOurs.length === 0 && onlyMinimal.length === 0
      ? "same keys"
      : [onlyOurs.length > 0 ? `only Gatehouse: ${onlyOurs.join(", ")}` : "", onlyMinimal.length > 0 ? `only minimal: ${onlyMinimal.join(", ")}` : ""]
        .filter((s) => s !== "").join("; ")
    return [`| ${scenario.title} | ${ours.perRequest.toFixed(1)} | ${minimal.perRequest.toFixed(1)} | ${agreement(ours, minimal)} | ${shape} |`]
  })
  return ["| Scenario | Gatehouse | minimal | statements | response |", "|---|---:|---:|---|---|", ...rows].join("\n")
}

const oneLine = (query: string): string => {
  const line = flat(query)
  return line.length > 120 ? `${line.slice(0, 117)}...` : line
}

/** Every statement each side ran per request, for putting the minimal server's SQL back in step. */
export const statementListing = (scenarios: ReadonlyArray<ScenarioInfo>, checks: ReadonlyArray<StatementCheck>): string =>
  scenarios.flatMap((scenario) =>
    (["gatehouse", "minimal"] as const).flatMap((side) => {
      const check = find(checks, scenario.id, side)
      if (check === undefined) return []
      return [
        `${scenario.title}: ${side}, ${check.perRequest.toFixed(1)} per request (${check.requests} requests)`,
        ...check.statements.map((s) => `  ${s.calls.toFixed(2).padStart(6)}  ${oneLine(s.query)}`),
        ...check.background.map((s) => `  ${s.calls.toFixed(2).padStart(6)}  (background, not counted) ${oneLine(s.query)}`),
        ""
      ]
    })
  ).join("\n")
