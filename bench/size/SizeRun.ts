/**
 * `npm run bench -- --size=1m`: Gatehouse against itself at two sizes. The size scenarios run at 200 users (made
 * through the API), then SQL adds a million users with their sessions, refresh tokens and audit rows, and the same
 * scenarios run again. Each row's CPU (server plus PostgreSQL) and p99 at the big size over the small one is what the
 * issue holds to 1.25×. Writes bench/results/<timestamp>-size.json and latest-size.md.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { loadavg, totalmem } from "node:os"
import { join } from "node:path"
import { deriveRefreshToken, refreshTokenKey } from "../../src/auth/sessions/RefreshTokenCodec.js"
import type { BenchOptions } from "../BenchOptions.js"
import { migrateGatehouse, serverEnv, startGatehouse } from "../Gatehouse.js"
import { commitOf, machineInfo, ticksPerSecond } from "../Machine.js"
import { measure, warmUp } from "../Measure.js"
import { password, refresh, signup, user } from "../scenarios/AuthScenarios.js"
import type { Scenario, ScenarioContext, Target } from "../scenarios/Scenario.js"
import { httpJson, keepAliveAgent } from "../load/HttpClient.js"
import { seed } from "../Seed.js"
import { serverSettings } from "../ServerSettings.js"
import { scratch, throwawayDatabase } from "../Throwaway.js"
import { StatementCounter } from "../StatementCounter.js"
import { adminScenarios, serviceRoleToken } from "./AdminScenarios.js"
import { type Phase, sizeRows, type SizeRun, sizeTable } from "./SizeReport.js"
import { type DatabaseSize, databaseSize, seedAtSize, sizePlan } from "./SizeSeed.js"

const SMALL_USERS = 200

const label = (users: number): string =>
  users >= 1_000_000 && users % 1_000_000 === 0 ? `${users / 1_000_000}M` : users >= 1_000 && users % 1_000 === 0 ? `${users / 1_000}k` : String(users)

/** The API scenarios at the size run's concurrency: one setting for every row, as the issue's table was measured. */
const atSizeConcurrency = (scenario: Scenario): Scenario => ({
  ...scenario,
  concurrency: (o) => o.sizeConnections,
  load: (target, context) => scenario.load(target, {
    ...context,
    options: { ...context.options, connections: context.options.sizeConnections, bcryptConnections: context.options.sizeConnections }
  })
})

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`

const sizeLine = (what: string, report: DatabaseSize): string =>
  `- ${what}: ${report.usersTotal} users, database ${mb(report.databaseBytes)}; ` +
  Object.entries(report.tableBytes).map(([t, b]) => `${t} ${mb(b)}`).join(", ")

/** What each 1,000 added users (with their share of sessions, tokens and audit rows) add to the database. */
const growthLine = (small: DatabaseSize, large: DatabaseSize): string =>
  `- database size per 1,000 users: ${((large.databaseBytes - small.databaseBytes) / (large.usersTotal - small.usersTotal) * 1000 / 1024 / 1024).toFixed(2)} MB ` +
  `(the seeded rows: per user an identity, half a session, 5 refresh tokens and 2 audit rows)`

/**
 * PostgreSQL as a production host of this machine's memory would run it, not pg.sh's defaults (shared_buffers 128 MB
 * against a database of several GB, where every run measured the page cache's misses as much as Gatehouse): the
 * usual starting points, a quarter of the memory for shared_buffers and three quarters as the planner's
 * effective_cache_size. Both sizes run under them.
 */
export const sizeRunPostgresSettings = (memoryBytes: number): Readonly<Record<string, string>> => {
  const mb = Math.floor(memoryBytes / 1024 / 1024)
  return { shared_buffers: `${Math.max(128, Math.floor(mb / 4))}MB`, effective_cache_size: `${Math.max(512, Math.floor(mb * 3 / 4))}MB` }
}

export const runSizeBench = async (
  repo: string,
  options: BenchOptions,
  users: number,
  progress: (line: string) => void
): Promise<void> => {
  const startedAt = new Date().toISOString()
  const loadAverageBefore = loadavg()
  const { cleanup, tmp } = scratch("size")
  try {
    const pgSettings = sizeRunPostgresSettings(totalmem())
    const { iamKey, pg, ports: { api, grpc, smtp } } = await throwawayDatabase(repo, { cleanup, tmp }, progress, pgSettings)
    const settings = serverSettings(pg.url, options, { api, smtp }, iamKey)
    const env = serverEnv({ ...settings, AUTH_API_PORT: String(api), AUTH_IAM_GRPC_PORT: String(grpc) })
    const target: Target = { side: "gatehouse", http: { host: "127.0.0.1", port: api }, grpc: `127.0.0.1:${grpc}` }
    progress("Gatehouse: migrate, then serve (production mode)…")
    await migrateGatehouse(repo, env, tmp)
    const gatehouse = await startGatehouse(repo, env, tmp, target.http)
    cleanup.add("stop Gatehouse", gatehouse.stop)
    const counter = new StatementCounter(pg.url)
    cleanup.add("close the statement counter", () => counter.end())

    progress(`seeding ${SMALL_USERS} users through POST /signup…`)
    const seeded = await seed(target.http, { users: SMALL_USERS, iamAccounts: 0 })
    const context: ScenarioContext = { options, seeded, gatehouse: target }
    const scenarios: ReadonlyArray<Scenario> = [
      ...[user, refresh, password, signup].map(atSizeConcurrency),
      ...adminScenarios(serviceRoleToken(settings.AUTH_JWT_SECRET))
    ].filter((s) => options.only === undefined || options.only.includes(s.id))
    const meters = { serverPid: gatehouse.pid, postmasterPid: pg.postmasterPid(), statements: counter, ticksPerSecond: ticksPerSecond() }
    const runs: Array<SizeRun> = []
    const runPhase = async (phase: Phase) => {
      for (const scenario of scenarios) {
        await warmUp(await scenario.load(target, context), options.warmupMs)
        for (let round = 1; round <= options.rounds; round++) {
          const record = await measure({ scenario: scenario.id, side: "gatehouse", round }, options, await scenario.load(target, context), meters)
          runs.push({ phase, record })
          progress(`  ${phase.padEnd(5)} ${scenario.id.padEnd(12)} round ${round}: ${record.reqPerSec.toFixed(0)} req/s, ` +
            `${(record.serverCpuMsPerReq + record.pgCpuMsPerReq).toFixed(2)} ms CPU/req, p99 ${record.latency.p99.toFixed(1)} ms` +
            (record.errors > 0 ? `, ${record.errors} FAILED: ${record.firstError ?? ""}` : ""))
        }
      }
    }

    const small = await databaseSize(pg.url)
    progress(`measuring at ${small.usersTotal} users…`)
    await runPhase("small")

    const plan = sizePlan(users)
    progress(`adding ${plan.users} users, ${plan.sessions} sessions, ${plan.sessions * plan.family} refresh tokens, ${plan.auditRows} audit rows by SQL…`)
    const large = await seedAtSize(pg.url, plan, refreshTokenKey(settings.AUTH_JWT_SECRET), progress)
    // A seeded session's current token must exchange: the seeded digests are the ones Gatehouse derives.
    const seededToken = deriveRefreshToken(refreshTokenKey(settings.AUTH_JWT_SECRET), large.firstSessionCurrent.sessionId, large.firstSessionCurrent.rowId)
    const agent = keepAliveAgent(1)
    await httpJson(target.http, agent, { method: "POST", path: "/token?grant_type=refresh_token", json: { refresh_token: seededToken } })
      .finally(() => agent.destroy())
    progress(`seeded in ${large.seconds.toFixed(0)} s (a seeded session's token exchanges); measuring at ${large.usersTotal} users…`)
    await runPhase("large")

    const labels = { small: label(small.usersTotal), large: label(large.usersTotal) }
    const rows = sizeRows(scenarios, runs)
    const document = [
      `# Gatehouse at size`,
      "",
      `${startedAt}, commit ${commitOf(repo)}; ${options.workers} worker(s), ${options.sizeConnections} requests in flight, ` +
      `${options.warmupMs / 1000} s warm-up, ${options.durationMs / 1000} s measured × ${options.rounds} round(s) per size. ` +
      `Load average before ${loadAverageBefore.map((l) => l.toFixed(2)).join(" ")}, after ${loadavg().map((l) => l.toFixed(2)).join(" ")}. ` +
      `PostgreSQL 15 with ${Object.entries(pgSettings).map(([k, v]) => `${k} ${v}`).join(", ")}.`,
      "",
      sizeTable(rows, labels),
      "",
      sizeLine(`at ${labels.small}`, small),
      sizeLine(`at ${labels.large}, seeded by SQL in ${large.seconds.toFixed(0)} s`, large),
      growthLine(small, large),
      ""
    ].join("\n")
    const dir = join(repo, "bench", "results")
    mkdirSync(dir, { recursive: true })
    const stamp = startedAt.replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z")
    const suffix = options.quick || options.only !== undefined ? "-size-partial" : "-size"
    writeFileSync(join(dir, `${stamp}${suffix}.json`), JSON.stringify({ startedAt, commit: commitOf(repo), machine: machineInfo(loadAverageBefore), options, postgres: pgSettings, users, small, large, runs, rows }, null, 2) + "\n")
    writeFileSync(join(dir, `latest${suffix}.md`), document)
    progress(`\n${document}`)
    progress(`Written in bench/results/: ${stamp}${suffix}.json, latest${suffix}.md`)
  } finally {
    progress("cleaning up: servers, PostgreSQL, temporary files…")
    await cleanup.runAll()
  }
}
