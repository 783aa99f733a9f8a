#!/usr/bin/env node
/**
 * `npm run test:reliability`: the reliability suite at full load, with its figures.
 *
 * Starts a throwaway PostgreSQL 15 (scripts/pg.sh) unless DATABASE_URL is set, so the tests that need a real
 * server (database outages, several instances) run; runs the reliability tests (test/reliability, random bad
 * input, the outage tests) with RELIABILITY_SCALE (default 5) times the load `npm test` gives them; then prints
 * what they did: requests tried, faults injected, inconsistencies found (must be 0) and the longest time to
 * recover. Exits non-zero when a test failed or an inconsistency was found. `npm test` runs the same tests at
 * scale 1: the fast subset.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const SUITE = [
  "test/reliability",
  "test/RandomBadInput.test.ts",
  "test/auth/settings/HealthDatabase.test.ts",
  "test/iam/DatabaseOutage.test.ts"
]

const work = mkdtempSync(join(tmpdir(), "gatehouse-reliability-"))
const figures = join(work, "figures.jsonl")
let startedPg = false
let databaseUrl = process.env.DATABASE_URL ?? ""

const pg = (...args) => spawnSync("bash", [join(root, "scripts", "pg.sh"), ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] })

try {
  if (databaseUrl === "") {
    const started = pg("start", join(work, "pg"))
    const line = /^DATABASE_URL=(\S+)$/m.exec(started.stdout ?? "")
    if (started.status !== 0 || line === null) {
      process.stderr.write("could not start PostgreSQL 15 (scripts/pg.sh): the tests that need one will be skipped\n")
    } else {
      databaseUrl = line[1]
      startedPg = true
    }
  }
  const env = {
    ...process.env,
    RELIABILITY_SCALE: process.env.RELIABILITY_SCALE ?? "5",
    RELIABILITY_FIGURES: figures,
    ...(databaseUrl === "" ? {} : { DATABASE_URL: databaseUrl })
  }
  const vitest = spawnSync(process.execPath, [join(root, "node_modules", "vitest", "vitest.mjs"), "run", ...SUITE], {
    cwd: root,
    env,
    stdio: "inherit"
  })

  const lines = (() => {
    try {
      return readFileSync(figures, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))
    } catch {
      return []
    }
  })()
  const sum = (kind) => lines.filter((f) => f.kind === kind).reduce((total, f) => total + f.value, 0)
  const recoveries = lines.filter((f) => f.kind === "recovery_ms").map((f) => f.value)
  const inconsistencies = sum("inconsistencies")
  const rows = [
    ["requests tried", String(sum("requests"))],
    ["faults injected", String(sum("faults"))],
    ["inconsistencies found", String(inconsistencies)],
    ["time to recover", recoveries.length === 0 ? "no outage measured" : `${Math.max(...recoveries)} ms at most (${recoveries.length} outages)`],
    ["load scale", env.RELIABILITY_SCALE],
    ["PostgreSQL", databaseUrl === "" ? "none: the PostgreSQL-only tests were skipped" : startedPg ? "throwaway PostgreSQL 15" : "DATABASE_URL"]
  ]
  process.stdout.write("\nReliability figures\n")
  for (const [name, value] of rows) process.stdout.write(`  ${name.padEnd(22)} ${value}\n`)
  const byTest = new Map()
  for (const f of lines) byTest.set(f.test, { ...byTest.get(f.test), [f.kind]: (byTest.get(f.test)?.[f.kind] ?? 0) + f.value })
  for (const [test, kinds] of byTest) {
    process.stdout.write(`    ${test}: ${Object.entries(kinds).map(([k, v]) => `${k} ${v}`).join(", ")}\n`)
  }
  process.exitCode = vitest.status !== 0 ? (vitest.status ?? 1) : inconsistencies > 0 ? 1 : 0
} finally {
  if (startedPg) pg("stop", join(work, "pg"))
  rmSync(work, { recursive: true, force: true })
}
