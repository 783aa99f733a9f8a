/**
 * `npm run bench`: a throwaway PostgreSQL 15, Gatehouse in production mode and the minimal server side by side,
 * seeded through Gatehouse's API, then each scenario's load against both, alternating sides. Writes
 * bench/results/<timestamp>.json, latest.md and latest.svg, and prints the table.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { availableParallelism, loadavg, tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { parseBenchOptions } from "./BenchOptions.js"
import { Cleanup } from "./Cleanup.js"
import { startFloorServers } from "./floor/FloorServers.js"
import { freePorts, generateIamKey, migrateGatehouse, serverEnv, startGatehouse } from "./Gatehouse.js"
import { commitOf, machineInfo, ticksPerSecond } from "./Machine.js"
import { type Meters, measure, warmUp } from "./Measure.js"
import { startPostgres } from "./Postgres.js"
import { MemorySampler, memoryRows, treeMemory } from "./ProcessMemory.js"
import { formatNumber } from "./report/Format.js"
import { markdownTable } from "./report/MarkdownTable.js"
import { memoryTable } from "./report/MemoryTable.js"
import type { RunRecord, Side } from "./report/RunRecord.js"
import { statementListing, statementTable } from "./report/StatementReport.js"
import { summarize } from "./report/Summary.js"
import { writeResults } from "./report/writeResults.js"
import type { Scenario, ScenarioContext, Target } from "./scenarios/Scenario.js"
import { SCENARIOS } from "./scenarios/Scenarios.js"
import { seed } from "./Seed.js"
import { serverSettings } from "./ServerSettings.js"
import { runSizeBench } from "./size/SizeRun.js"
import { runSoakBench } from "./soak/SoakRun.js"
import { type ServerProcess, startServer } from "./ServerProcess.js"
import { checkStatements } from "./StatementCheck.js"
import { StatementCounter } from "./StatementCounter.js"

const HERE = dirname(fileURLToPath(import.meta.url)) // dist-bench/bench
const REPO = resolve(HERE, "..", "..")
const SIDES: ReadonlyArray<Side> = ["gatehouse", "minimal"]

const bySide = <A>(f: (side: Side) => A): Record<Side, A> => ({ gatehouse: f("gatehouse"), minimal: f("minimal") })

const progress = (line: string): void => {
  process.stdout.write(`${line}\n`)
}

const runLine = (scenario: Scenario, r: RunRecord, rounds: number): string =>
  `  ${scenario.id.padEnd(13)} ${r.side.padEnd(9)} round ${r.round}/${rounds}: ${formatNumber(r.reqPerSec).padStart(6)} req/s` +
  `  p50 ${formatNumber(r.latency.p50)} ms  p99 ${formatNumber(r.latency.p99)} ms` +
  `  server ${formatNumber(r.serverCpuMsPerReq)} ms/req  pg ${formatNumber(r.pgCpuMsPerReq)} ms/req` +
  `  ${r.statementsPerReq.toFixed(1)} stmt/req  other ${(r.otherCpuShare * 100).toFixed(0)}%` +
  (r.background === undefined ? "" : `  (+${formatNumber(r.background.reqPerSec)} sign-ins/s)`) +
  (r.errors > 0 ? `  ${r.errors} FAILED: ${r.firstError ?? ""}` : "")

/** One scenario: an unmeasured warm-up per side, then the rounds, sides alternating. */
const runScenario = async (
  scenario: Scenario,
  sides: Record<Side, { readonly target: Target; readonly pid: number }>,
  context: ScenarioContext,
  meters: Omit<Meters, "serverPid">
): Promise<Array<RunRecord>> => {
  const { options } = context
  const spec = { warmupMs: options.warmupMs, durationMs: options.durationMs }
  for (const side of SIDES) await warmUp(await scenario.load(sides[side].target, context), options.warmupMs)
  const runs: Array<RunRecord> = []
  for (let round = 1; round <= options.rounds; round++) {
    for (const side of SIDES) {
      const load = await scenario.load(sides[side].target, context)
      const record = await measure({ scenario: scenario.id, side, round }, spec, load, { ...meters, serverPid: sides[side].pid })
      runs.push(record)
      progress(runLine(scenario, record, options.rounds))
    }
  }
  return runs
}

const main = async (): Promise<void> => {
  const options = parseBenchOptions(process.argv.slice(2), process.env, availableParallelism())
  if (options.size !== undefined) return runSizeBench(REPO, options, options.size, progress)
  if (options.soak !== undefined) return runSoakBench(REPO, options, options.soak, progress)
  const began = Date.now()
  const elapsed = () => `${((Date.now() - began) / 1000).toFixed(0)} s`
  const startedAt = new Date().toISOString()
  const loadAverageBefore = loadavg()
  const scenarios = SCENARIOS.filter((s) => options.only === undefined || options.only.includes(s.id))
  if (scenarios.length === 0) throw new Error(`--only matched no scenario (${SCENARIOS.map((s) => s.id).join(", ")})`)

  const cleanup = new Cleanup()
  cleanup.exitOnSignals()
  const tmp = mkdtempSync(join(tmpdir(), "gatehouse-bench-"))
  cleanup.add("remove the temporary directory", () => rmSync(tmp, { recursive: true, force: true }))
  try {
    progress("PostgreSQL 15: starting a throwaway instance (scripts/pg.sh) with pg_stat_statements…")
    const pg = await startPostgres(REPO, join(tmp, "pg"), (stop) => cleanup.add("stop PostgreSQL", stop))

    const [api, grpc, minimalApi, minimalGrpc, smtp] = await freePorts(5)
    const settings = serverSettings(pg.url, options, { api, smtp }, await generateIamKey(REPO, tmp))
    const targets: Record<Side, Target> = {
      gatehouse: { side: "gatehouse", http: { host: "127.0.0.1", port: api }, grpc: `127.0.0.1:${grpc}` },
      minimal: { side: "minimal", http: { host: "127.0.0.1", port: minimalApi }, grpc: `127.0.0.1:${minimalGrpc}` }
    }

    progress("Gatehouse: migrate, then serve (production mode)…")
    const gatehouseEnv = serverEnv({ ...settings, AUTH_API_PORT: String(api), AUTH_IAM_GRPC_PORT: String(grpc) })
    await migrateGatehouse(REPO, gatehouseEnv, tmp)
    const gatehouse = await startGatehouse(REPO, gatehouseEnv, tmp, targets.gatehouse.http)
    cleanup.add("stop Gatehouse", gatehouse.stop)
    progress("minimal server: starting…")
    const minimal = await startServer({
      name: "minimal",
      script: join(HERE, "minimal", "MinimalServer.js"),
      env: serverEnv({ ...settings, AUTH_API_PORT: String(minimalApi), AUTH_IAM_GRPC_PORT: String(minimalGrpc) }),
      cwd: tmp,
      logPath: join(tmp, "minimal.log")
    })
    cleanup.add("stop the minimal server", minimal.stop)
    const servers: Record<Side, ServerProcess> = { gatehouse, minimal }
    const counter = new StatementCounter(pg.url)
    cleanup.add("close the statement counter", () => counter.end())

    // Both servers at idle: started, nothing asked of them yet but /health.
    const idleMemory = bySide((side) => treeMemory(servers[side].pid))
    progress(`RSS at idle: ${SIDES.map((side) => `${side} ${[...idleMemory[side].processes].map(([role, m]) => `${role} ${m.rssMb.toFixed(0)} MB`).join(", ")}`).join("; ")}`)
    progress("seeding 64 users (POST /signup) and 16 IAM accounts (POST /auth/register) through Gatehouse…")
    const seeded = await seed(targets.gatehouse.http, { users: 64, iamAccounts: 16 })
    const context: ScenarioContext = { options, seeded, gatehouse: targets.gatehouse }

    const checks = await checkStatements({ scenarios, targets: SIDES.map((side) => targets[side]), context, counter, requests: 10, progress })
    if (options.sqlOnly) {
      progress(`\n${statementListing(scenarios, checks)}`)
      progress(statementTable(scenarios, checks))
      return
    }

    const runs: Array<RunRecord> = []
    // Under load: sampled every second while the scenarios run (a floor scenario's own servers are not these).
    const samplers = bySide((side) => new MemorySampler(servers[side].pid))
    cleanup.add("stop the memory samplers", () => SIDES.forEach((side) => samplers[side].stop()))
    const meters = { postmasterPid: pg.postmasterPid(), statements: counter, ticksPerSecond: ticksPerSecond() }
    for (const [index, scenario] of scenarios.entries()) {
      progress(`[${index + 1}/${scenarios.length}] ${scenario.title}, ${scenario.concurrency(options)} in flight (${elapsed()})`)
      if (scenario.floor !== true) {
        runs.push(...await runScenario(scenario, bySide((side) => ({ target: targets[side], pid: servers[side].pid })), context, meters))
        continue
      }
      const floor = await startFloorServers(options.workers, join(HERE, "floor"), tmp)
      try {
        runs.push(...await runScenario(scenario, bySide((side) => ({ target: floor[side].target, pid: floor[side].server.pid })), context, meters))
      } finally {
        await Promise.all(SIDES.map((side) => floor[side].server.stop()))
      }
    }

    const memoryServers = SIDES.map((side) => ({ side, rows: memoryRows(idleMemory[side], samplers[side].stop()) }))
    const memory = { servers: memoryServers, table: memoryTable(memoryServers) }
    const rows = summarize(scenarios, runs, checks)
    const written = writeResults(join(REPO, "bench", "results"), {
      settings: {
        startedAt,
        commit: commitOf(REPO),
        machine: machineInfo(loadAverageBefore),
        workers: options.workers,
        warmupMs: options.warmupMs,
        durationMs: options.durationMs,
        rounds: options.rounds,
        concurrency: scenarios.map((s) => ({ title: s.title, concurrency: s.concurrency(options) }))
      },
      options,
      scenarios,
      checks,
      runs,
      rows,
      memory
    })
    progress(`\n${markdownTable(rows)}\n\n${memory.table}\n`)
    progress(`Written in bench/results/: ${written.join(", ")} (${elapsed()} in all)`)
  } catch (error) {
    // The servers' logs go with the temporary directory: show their ends first.
    for (const log of readdirSync(tmp).filter((f) => f.endsWith(".log"))) {
      const lines = readFileSync(join(tmp, log), "utf8").trimEnd().split("\n").slice(-15)
      if (lines.join("") !== "") process.stderr.write(`--- ${log} (last lines)\n${lines.join("\n")}\n`)
    }
    throw error
  } finally {
    progress("cleaning up: servers, PostgreSQL, temporary files…")
    await cleanup.runAll()
  }
}

main().then(
  // Everything is stopped by now; an HTTP/2 or gRPC client socket still closing must not hold the process.
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`)
    process.exit(1)
  }
)
