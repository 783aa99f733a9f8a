/**
 * `npm run bench -- --soak[=10m]`: Gatehouse alone, at its default settings, under a steady mixed load for the
 * given time, its process tree's RSS sampled throughout; whether any process grew beyond noise (GrowthVerdict).
 * Writes bench/results/<timestamp>-soak.json and latest-soak.md.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { loadavg } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import type { BenchOptions } from "../BenchOptions.js"
import { migrateGatehouse, serverEnv, startGatehouse } from "../Gatehouse.js"
import { commitOf, machineInfo } from "../Machine.js"
import { type CgroupReading, createMemoryCgroup, privateNode } from "../MemoryCgroup.js"
import { uniqueResidentMb } from "../PageFrames.js"
import { type ProcessReading, treeProcesses } from "../ProcessMemory.js"
import { seed } from "../Seed.js"
import { serverSettings } from "../ServerSettings.js"
import { scratch, throwawayDatabase } from "../Throwaway.js"
import type { ServerProcess } from "../ServerProcess.js"
import { edgeWindowMs, formatDuration, soakSampleIntervalMs } from "./SoakDuration.js"
import { SOAK_MIX, SoakLoad } from "./SoakLoad.js"
import { soakDocument } from "./SoakReport.js"
import { type SoakSample, summarizeSoak } from "./SoakSummary.js"

/**
 * The bench's settings less those it sets only to compare like with like (workers, pool size, the quiet log level):
 * the soak measures Gatehouse as it ships. What is left is what a server cannot start without (the database, the
 * JWT secret, the site URL, the IAM key) and autoconfirm, so sign-ups send no mail.
 */
const DEFAULTED = new Set(["AUTH_WORKERS", "AUTH_DB_MAX_POOL_SIZE", "LOG_LEVEL"])

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * /health answers once one worker serves; the others may still be loading, and their RSS is not yet an idle
 * worker's. The primary logs "Listening on" once every worker serves (at the default log level, info).
 */
const allServing = async (server: ServerProcess): Promise<void> => {
  if (treeProcesses(server.pid).length <= 1) return
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (existsSync(server.logPath) && readFileSync(server.logPath, "utf8").includes("Listening on")) return
    await sleep(100)
  }
  throw new Error(`Gatehouse did not log "Listening on" within 60 s of answering /health; see ${server.logPath}`)
}

const line = (sample: SoakSample): string =>
  `  ${formatDuration(sample.atMs).padStart(9)}  tree ${sample.processes.reduce((n, p) => n + p.rssMb, 0).toFixed(0)} MB ` +
  (sample.uniqueMb === undefined ? "" : `(each page once ${sample.uniqueMb.toFixed(0)}) `) +
  `(${sample.processes.map((p) => `${p.role} ${p.rssMb.toFixed(0)}`).join(", ")})  ${sample.requests} answered, ${sample.failed} failed`

export const runSoakBench = async (
  repo: string,
  options: BenchOptions,
  durationMs: number,
  progress: (line: string) => void
): Promise<void> => {
  const startedAt = new Date().toISOString()
  const loadAverageBefore = loadavg()
  const { cleanup, tmp } = scratch("soak")
  try {
    const { iamKey, pg, ports: { api, grpc, smtp } } = await throwawayDatabase(repo, { cleanup, tmp }, progress)
    const settings = Object.fromEntries(
      Object.entries(serverSettings(pg.url, options, { api, smtp }, iamKey)).filter(([name]) => !DEFAULTED.has(name))
    )
    const env = serverEnv({ ...settings, AUTH_API_PORT: String(api), AUTH_IAM_GRPC_PORT: String(grpc) })
    const target = { host: "127.0.0.1", port: api }
    progress("Gatehouse: migrate, then serve (production mode, default settings)…")
    await migrateGatehouse(repo, env, tmp)
    // With --memory-limit: the server in a memory cgroup of that size, on a node of its own (MemoryCgroup.ts).
    const cgroup = options.memoryLimitMb === undefined ? undefined : createMemoryCgroup(options.memoryLimitMb, `gatehouse-soak-${process.pid}`)
    if (typeof cgroup === "string") throw new Error(`--memory-limit: ${cgroup}`)
    if (cgroup !== undefined) {
      cleanup.add("remove the memory cgroup", cgroup.remove)
      progress(`the server runs in the memory cgroup ${cgroup.directory}, limited to ${cgroup.limitMb} MB, on a private copy of node`)
    }
    const gatehouse = await startGatehouse(repo, env, tmp, target, cgroup === undefined ? {} : {
      executable: privateNode(join(tmp, "node")),
      onSpawn: cgroup.enter
    })
    cleanup.add("stop Gatehouse", gatehouse.stop)
    await allServing(gatehouse)
    const cgroupIdle: CgroupReading | undefined = cgroup?.read()

    // At idle: every worker serving, nothing asked of them yet but /health.
    const idle = treeProcesses(gatehouse.pid)
    const idleUniqueMb = uniqueResidentMb(idle.map((p) => p.pid))
    const workers = Math.max(1, idle.length - 1)
    progress(`RSS at idle: ${idle.map((p) => `${p.role} (pid ${p.pid}) ${p.rssMb.toFixed(0)} MB`).join(", ")}`)
    progress("seeding 16 users through POST /signup…")
    const seeded = await seed(target, { users: 16, iamAccounts: 0 })

    const intervalMs = soakSampleIntervalMs(durationMs)
    progress(`soak: ${formatDuration(durationMs)} of ${SOAK_MIX.user} GET /user, ${SOAK_MIX.refresh} refresh chains and ` +
      `${SOAK_MIX.signup} sign-up in flight, sampled every ${formatDuration(intervalMs)}…`)
    const load = await SoakLoad.start(target, seeded)
    cleanup.add("stop the load", () => load.stop())
    const began = performance.now()
    const samples: Array<SoakSample> = []
    const printEvery = Math.max(1, Math.round(10_000 / intervalMs))
    // Each sample is due at a fixed time from the start, so a late timer does not shift the ones after it.
    for (let k = 1; k * intervalMs <= durationMs; k++) {
      await sleep(Math.max(0, began + k * intervalMs - performance.now()))
      const processes: ReadonlyArray<ProcessReading> = treeProcesses(gatehouse.pid)
      const uniqueMb = uniqueResidentMb(processes.map((p) => p.pid))
      const sample = { atMs: performance.now() - began, processes, uniqueMb, ...load.totals() }
      samples.push(sample)
      if (k % printEvery === 0) progress(line(sample))
    }
    const runMs = performance.now() - began
    await load.stop()
    const cgroupReadings = cgroup === undefined || cgroupIdle === undefined ? undefined : { idle: cgroupIdle, after: cgroup.read() }

    const summary = summarizeSoak(idle, samples, runMs, idleUniqueMb)
    const document = soakDocument({
      startedAt,
      commit: commitOf(repo),
      durationMs: runMs,
      sampleIntervalMs: intervalMs,
      edgeWindowMs: edgeWindowMs(runMs),
      workers,
      mix: SOAK_MIX,
      summary,
      counts: load.byKind(),
      chainRestarts: load.chainRestarts(),
      loadAverage: { before: loadAverageBefore, after: loadavg() },
      ...(cgroupReadings === undefined ? {} : { cgroup: cgroupReadings })
    })
    const dir = join(repo, "bench", "results")
    mkdirSync(dir, { recursive: true })
    const stamp = startedAt.replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z")
    // A soak shorter than the issue's ten minutes is a check of the harness: its files do not replace a full one's;
    // nor do a limited one's replace an unlimited one's.
    const suffix = `${durationMs >= 10 * 60_000 ? "-soak" : "-soak-short"}${cgroup === undefined ? "" : `-${cgroup.limitMb}mb`}`
    writeFileSync(join(dir, `${stamp}${suffix}.json`), JSON.stringify({
      startedAt, commit: commitOf(repo), machine: machineInfo(loadAverageBefore), options, durationMs, runMs, intervalMs,
      mix: SOAK_MIX, workers, idle, idleUniqueMb, samples, counts: load.byKind(), chainRestarts: load.chainRestarts(), summary,
      cgroup: cgroupReadings
    }, null, 2) + "\n")
    writeFileSync(join(dir, `latest${suffix}.md`), document)
    progress(`\n${document}`)
    progress(`Written in bench/results/: ${stamp}${suffix}.json, latest${suffix}.md`)
  } finally {
    progress("cleaning up: load, server, PostgreSQL, temporary files…")
    await cleanup.runAll()
  }
}
