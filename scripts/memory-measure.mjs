#!/usr/bin/env node
// Memory and CPU of a running Gatehouse tree (docs/plans/issue-30-memory.md): starts `node <main> serve` with the
// environment it is given (DATABASE_URL, AUTH_JWT_SECRET, ...), reads VmRSS of the primary and each child from
// /proc at idle, then under GET /user (autocannon) and refresh-token chains, each for LOAD_SECONDS, sampling every
// second; CPU per request is the workers' utime+stime over the requests served. It stops what it started, by pid.
//
//   node scripts/memory-measure.mjs <dist/main.js> [label]     (env: the server's, plus LOAD_SECONDS, CONNECTIONS)
import { spawn } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import autocannon from "autocannon"

const [main, label = main] = process.argv.slice(2)
const LOAD_SECONDS = Number(process.env["LOAD_SECONDS"] ?? 20)
const CONNECTIONS = Number(process.env["CONNECTIONS"] ?? 16)
const TICK = 100 // clock ticks per second (getconf CLK_TCK)

const stat = (pid) => {
  try {
    const line = readFileSync(`/proc/${pid}/stat`, "utf8")
    const rest = line.slice(line.lastIndexOf(")") + 2).split(" ")
    return { ppid: Number(rest[1]), ticks: Number(rest[11]) + Number(rest[12]) }
  } catch {
    return undefined
  }
}
const rssMb = (pid) => {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024
  } catch {
    return undefined
  }
}
const childrenOf = (pid) =>
  readdirSync("/proc").filter((n) => /^\d+$/.test(n)).map(Number).filter((p) => stat(p)?.ppid === pid && /node/.test(comm(p)))
const comm = (pid) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim()
  } catch {
    return ""
  }
}

const dir = mkdtempSync(join(tmpdir(), "gatehouse-memory-"))
// MEASURE_NODE_ARGS: node options for the server (e.g. --import ./scripts/memory-census.mjs, with MEMORY_CENSUS_DIR:
// every process then writes its census at idle and after the GET /user load).
const nodeArgs = (process.env["MEASURE_NODE_ARGS"] ?? "").split(" ").filter(Boolean)
const server = spawn(process.execPath, [...nodeArgs, main], { cwd: dir, env: process.env, stdio: ["ignore", "pipe", "pipe"] })
// Kept until the server listens; after that the access log (a line a request) is read and dropped.
let output = ""
let keep = true
server.stdout.on("data", (d) => keep && (output += d))
server.stderr.on("data", (d) => keep && (output += d))
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const processes = () => [server.pid, ...childrenOf(server.pid)]
const sample = () => Object.fromEntries(processes().map((pid, i) => [i === 0 ? "primary" : `worker-${i}`, rssMb(pid)]))

const request = async (url, method, path, body, token) => {
  const response = await fetch(new URL(path, url), {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  return { status: response.status, json: await response.json().catch(() => undefined) }
}

/** RSS samples each second while `load` runs, and the workers' CPU ticks it cost. */
const measured = async (load) => {
  const workers = childrenOf(server.pid)
  const before = workers.map((p) => stat(p).ticks)
  const samples = []
  let done = false
  const sampler = (async () => {
    while (!done) {
      samples.push(sample())
      await sleep(1000)
    }
  })()
  const requests = await load()
  done = true
  await sampler
  const ticks = workers.reduce((sum, p, i) => sum + (stat(p)?.ticks ?? before[i]) - before[i], 0)
  const roles = Object.keys(samples[0])
  const max = Object.fromEntries(roles.map((r) => [r, Math.max(...samples.map((s) => s[r] ?? 0))]))
  const total = Math.max(...samples.map((s) => Object.values(s).reduce((a, b) => a + (b ?? 0), 0)))
  return { requests, cpuMsPerRequest: (ticks * 1000 / TICK) / requests, max, maxTotal: total }
}

try {
  const deadline = Date.now() + 120_000
  let url
  while ((url = /Listening on (http:\/\/[\d.]+:\d+)/.exec(output)?.[1]) === undefined) {
    if (server.exitCode !== null || Date.now() > deadline) throw new Error(`did not start:\n${output}`)
    await sleep(100)
  }
  keep = false
  await sleep(5000)
  const idle = sample()
  const census = () => {
    if (nodeArgs.some((arg) => arg.includes("memory-census"))) for (const pid of processes()) process.kill(pid, "SIGUSR2")
  }
  census()
  // A user, its access token and refresh tokens (one chain per connection).
  const email = `memory-${Date.now()}@example.com`
  const password = "memory measure password"
  const signup = await request(url, "POST", "/signup", { email, password })
  if (signup.status !== 200) throw new Error(`signup: ${signup.status} ${JSON.stringify(signup.json)}`)
  const access = signup.json.access_token
  const getUser = await measured(() =>
    new Promise((resolve, reject) =>
      autocannon({ url: `${url}/user`, connections: CONNECTIONS, duration: LOAD_SECONDS, headers: { authorization: `Bearer ${access}` } }, (error, result) =>
        error ? reject(error) : resolve(result.non2xx > 0 ? Promise.reject(new Error(`${result.non2xx} non-2xx`)) : result.requests.total))
    ))
  census()
  const chains = await Promise.all(Array.from({ length: CONNECTIONS }, async () =>
    (await request(url, "POST", "/token?grant_type=password", { email, password })).json.refresh_token))
  const refresh = await measured(async () => {
    const end = Date.now() + LOAD_SECONDS * 1000
    let count = 0
    await Promise.all(chains.map(async (token) => {
      while (Date.now() < end) {
        const r = await request(url, "POST", "/token?grant_type=refresh_token", { refresh_token: token })
        if (r.status !== 200) throw new Error(`refresh: ${r.status} ${JSON.stringify(r.json)}`)
        token = r.json.refresh_token
        count++
      }
    }))
    return count
  })
  await sleep(3000)
  const after = sample()
  const fmt = (o) => Object.entries(o).map(([k, v]) => `${k} ${v?.toFixed(1)}`).join(", ")
  const sum = (o) => Object.values(o).reduce((a, b) => a + (b ?? 0), 0).toFixed(1)
  console.log(`## ${label}`)
  console.log(`idle:        ${fmt(idle)}; tree ${sum(idle)} MB`)
  console.log(`GET /user:   max ${fmt(getUser.max)}; tree max ${getUser.maxTotal.toFixed(1)} MB; ${getUser.requests} req, ${(getUser.requests / LOAD_SECONDS).toFixed(0)}/s, workers' CPU ${getUser.cpuMsPerRequest.toFixed(3)} ms/req`)
  console.log(`refresh:     max ${fmt(refresh.max)}; tree max ${refresh.maxTotal.toFixed(1)} MB; ${refresh.requests} req, ${(refresh.requests / LOAD_SECONDS).toFixed(0)}/s, workers' CPU ${refresh.cpuMsPerRequest.toFixed(3)} ms/req`)
  console.log(`after load:  ${fmt(after)}; tree ${sum(after)} MB`)
} catch (error) {
  console.error(String(error))
  process.exitCode = 1
} finally {
  server.kill("SIGTERM")
  await new Promise((resolve) => (server.exitCode !== null ? resolve() : server.once("exit", resolve)))
  rmSync(dir, { recursive: true, force: true })
}
