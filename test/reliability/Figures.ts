import { appendFileSync } from "node:fs"

/**
 * The figures `npm run test:reliability` prints: each reliability test records what it did (requests tried, faults
 * injected, inconsistencies found, time to recover) under a name. They go to the JSON-lines file named by
 * RELIABILITY_FIGURES when the runner sets it, and to the test's output either way.
 */
export type FigureKind = "requests" | "faults" | "inconsistencies" | "recovery_ms"

export const recordFigure = (test: string, kind: FigureKind, value: number): void => {
  const line = JSON.stringify({ test, kind, value })
  const file = process.env["RELIABILITY_FIGURES"]
  if (file !== undefined && file !== "") appendFileSync(file, line + "\n")
  process.stdout.write(`reliability figure: ${line}\n`)
}

/**
 * How much load a reliability test applies: 1 in `npm test` (the fast subset), more under `npm run
 * test:reliability` (RELIABILITY_SCALE). Loops multiply their request counts by it; they stay bounded.
 */
export const reliabilityScale: number = Math.max(1, Math.min(20, Math.floor(Number(process.env["RELIABILITY_SCALE"] ?? "1")) || 1))
