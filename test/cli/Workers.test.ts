import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { request } from "node:http"
import { type AddressInfo, connect, createServer, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as grpc from "@grpc/grpc-js"
import * as protoLoader from "@grpc/proto-loader"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option, Scope } from "effect"
import { readMigrations } from "../../src/platform/sql/Migrator.js"
import { grpcClients } from "../iam/support/GrpcJs.js"
import { freePort, parsePrometheus } from "../support/Prometheus.js"
import { externalDatabaseUrl, freshDatabaseUrl } from "../support/TestDatabase.js"

// AUTH_WORKERS: the built program, run as an operator runs it, serving from several processes (node:cluster).
const MAIN = fileURLToPath(new URL("../../dist/main.js", import.meta.url))
const HEALTH_PROTO = fileURLToPath(new URL("../../node_modules/grpc-health-check/proto/health/v1/health.proto", import.meta.url))

type LogLine = Record<string, unknown>

/** A started Gatehouse: its JSON log lines as they arrive, and how it ended. */
class Started {
  readonly lines: Array<LogLine> = []
  stdout = ""
  stderr = ""
  readonly ended: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>

  constructor(readonly child: ChildProcess) {
    let partial = ""
    child.stdout!.on("data", (chunk) => {
      this.stdout += chunk
      partial += chunk
      const complete = partial.split("\n")
      partial = complete.pop()!
      for (const line of complete) if (line.startsWith("{")) this.lines.push(JSON.parse(line) as LogLine)
    })
    child.stderr!.on("data", (chunk) => (this.stderr += chunk))
    this.ended = new Promise((resolve) => child.on("close", (code, signal) => resolve({ code, signal })))
  }

  /** Resolves once `check` holds for the lines logged so far; rejects if the process ends first or after `ms`. */
  async until<A>(what: string, check: (lines: ReadonlyArray<LogLine>) => A | undefined, ms = 30_000): Promise<A> {
    const deadline = Date.now() + ms
    let exited = false
    void this.ended.then(() => (exited = true))
    while (true) {
      const found = check(this.lines)
      if (found !== undefined) return found
      if (exited || Date.now() > deadline) {
        throw new Error(`${exited ? "exited" : "timed out"} waiting for ${what}:\n${this.stdout}\n${this.stderr}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}

/** `group`: in a process group of its own, as a shell runs it, so a test can signal the group the way Ctrl-C does. */
const start = (env: Record<string, string>, cwd: string, options: { readonly group?: boolean } = {}) =>
  new Started(spawn(process.execPath, [MAIN], {
    cwd,
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.group === true
  }))

/**
 * A sign-up whose body is still coming when `stop` is called: it waits for the 100 Continue (a worker has read the
 * headers), stops the server, then sends the rest. The raw reply.
 */
const signUpInFlight = async (url: string, email: string, stop: () => void): Promise<string> => {
  const { hostname, port } = new URL(url)
  const body = JSON.stringify({ email, password: "in-flight-password" })
  const socket = connect(Number(port), hostname)
  let reply = ""
  socket.on("data", (d) => (reply += d))
  socket.on("error", () => undefined) // a reset shows as a short reply
  const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()))
  socket.write(`POST /signup HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\nExpect: 100-continue\r\n\r\n${body.slice(0, 10)}`)
  await new Promise<void>((resolve) => socket.on("data", () => reply.includes("100 Continue") && resolve()))
  stop()
  // write, not end: a client that half-closes its side makes Node abort the pending request.
  socket.write(body.slice(10))
  await closed
  return reply
}

const ANSWERED = /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 .*"access_token"/s

/** One request on a connection of its own, so the cluster's round-robin hands each to the next worker. */
const send = (url: string, method: string, path: string, body?: object, token?: string) =>
  new Promise<{ readonly status: number; readonly json: any }>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const req = request(new URL(path, url), {
      method,
      agent: false,
      headers: {
        ...(payload === undefined ? {} : { "content-type": "application/json" }),
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` })
      }
    }, (res) => {
      let text = ""
      res.on("data", (d) => (text += d))
      res.on("end", () => resolve({ status: res.statusCode!, json: text === "" ? undefined : JSON.parse(text) }))
    })
    req.on("error", reject)
    req.end(payload)
  })

const health = grpc.loadPackageDefinition(protoLoader.loadSync(HEALTH_PROTO, { keepCase: true, enums: String, defaults: true })) as any

/** The gRPC health status of the whole server, over a channel (a TCP connection) of its own. */
const grpcHealth = (address: string) =>
  new Promise<string>((resolve) => {
    const client = new health.grpc.health.v1.Health(address, grpc.credentials.createInsecure())
    client.Check({ service: "" }, (error: grpc.ServiceError | null, reply: any) => {
      client.close()
      resolve(error === null ? reply.status : grpc.status[error.code]!)
    })
  })

const childPids = (pid: number): ReadonlyArray<number> => {
  try {
    return execFileSync("ps", ["-o", "pid=", "--ppid", String(pid)], { encoding: "utf8" }).split("\n")
      .map((line) => Number(line.trim())).filter((n) => n > 0)
  } catch {
    return [] // ps exits 1 when nothing matches
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** The address every worker reports for `message` once `count` distinct workers have: one shared socket, not one each. */
const sharedAddress = (lines: ReadonlyArray<LogLine>, message: RegExp, count: number): string | undefined => {
  const matching = lines.filter((l) => message.test(String(l["msg"])) && typeof l["worker"] === "number")
  if (new Set(matching.map((l) => l["worker"])).size < count) return undefined
  const addresses = new Set(matching.map((l) => message.exec(String(l["msg"]))![1]!))
  expect([...addresses]).toHaveLength(1)
  return [...addresses][0]
}

const LISTENING = /^Listening on (http:\/\/[\d.]+:\d+)$/
const GRPC_LISTENING = /^IAM gRPC listening on ([\d.]+:\d+)$/

const workDirs: Array<string> = []
const workDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-workers-"))
  workDirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of workDirs) rmSync(dir, { recursive: true, force: true })
})

const generatedPaserk = (): string => {
  const match = /k4\.secret\.[A-Za-z0-9_-]+/.exec(execFileSync(process.execPath, [MAIN, "iam", "generate-key"], { encoding: "utf8" }))
  if (match === null) throw new Error("generate-key printed no k4.secret key")
  return match[0]
}

describe.skipIf(Option.isNone(externalDatabaseUrl))("AUTH_WORKERS on PostgreSQL", () => {
  let scope: Scope.CloseableScope
  let env: Record<string, string>
  beforeAll(async () => {
    scope = Effect.runSync(Scope.make())
    const fresh = await Effect.runPromise(Scope.extend(freshDatabaseUrl(Option.getOrThrow(externalDatabaseUrl)), scope))
    env = {
      DATABASE_URL: fresh.url,
      AUTH_DB_DRIVER: "postgres",
      AUTH_SITE_URL: "http://localhost:3000",
      API_EXTERNAL_URL: "http://localhost:9999",
      AUTH_JWT_SECRET: "workers-test-jwt-secret-0123456789-abcdefghij",
      AUTH_SMTP_ADMIN_EMAIL: "admin@example.com",
      AUTH_SMTP_HOST: "127.0.0.1",
      AUTH_SMTP_PORT: "2525",
      AUTH_MAILER_AUTOCONFIRM: "true",
      // As a deployment behind a proxy sets it; without it the primary warns that per-IP limits are off (Cli.test).
      AUTH_RATE_LIMIT_HEADER: "X-Real-IP",
      AUTH_IAM_PASETO_SECRET_KEY: generatedPaserk(),
      AUTH_API_HOST: "127.0.0.1",
      AUTH_IAM_GRPC_HOST: "127.0.0.1",
      PORT: "0",
      AUTH_IAM_GRPC_PORT: "0",
      LOG_LEVEL: "info",
      AUTH_WORKERS: "2",
      AUTH_IAM_BOOTSTRAP_ADMIN_USERNAME: "root",
      AUTH_IAM_BOOTSTRAP_ADMIN_EMAIL: "root@example.com",
      AUTH_IAM_BOOTSTRAP_ADMIN_PASSWORD: "root password"
    }
  })
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  it("two workers share both ports and the database; a killed one is replaced; SIGTERM lets requests finish, exit 0", async () => {
    const server = start(env, workDir())
    const primary = server.child.pid!
    try {
      // The primary says where, once both workers serve; they listen on the one address it chose for each port 0.
      const url = await server.until("the primary's address line", (lines) => {
        const listening = lines.find((l) => LISTENING.test(String(l["msg"])))
        return listening === undefined ? undefined : LISTENING.exec(String(listening["msg"]))![1]!
      })
      const grpcAddress = sharedAddress(server.lines, GRPC_LISTENING, 2)!
      expect(url).not.toMatch(/:0$/)
      expect(grpcAddress).not.toMatch(/:0$/)
      expect(server.lines.filter((l) => LISTENING.test(String(l["msg"])))).toMatchObject([{ workers: 2, grpc: grpcAddress }])
      expect(server.lines.filter((l) => l["msg"] === "starting 2 workers")).toHaveLength(1)
      // The primary migrated and made the configured IAM admin, once; the workers did neither.
      expect(server.lines.filter((l) => String(l["msg"]).startsWith("migrations:"))).toMatchObject([{ msg: `migrations: applied ${readMigrations().length}` }])
      expect(server.lines.filter((l) => String(l["msg"]).startsWith("iam: bootstrap admin"))).toMatchObject([{ msg: "iam: bootstrap admin created" }])
      expect(server.lines.filter((l) => !("worker" in l)).map((l) => l["msg"])).toStrictEqual([
        `migrations: applied ${readMigrations().length}`, "iam: bootstrap admin created", "starting 2 workers", `Listening on ${url}`
      ])
      const firstPids = childPids(primary)
      expect(firstPids).toHaveLength(2)

      // Sign up on one connection, sign in on the next ones: the cluster deals connections out in turn.
      expect((await send(url, "POST", "/signup", { email: "two@example.com", password: "two workers" })).status).toBe(200)
      const tokens: Array<string> = []
      for (let i = 0; i < 4; i++) {
        const signedIn = await send(url, "POST", "/token?grant_type=password", { email: "two@example.com", password: "two workers" })
        expect(signedIn.status).toBe(200)
        tokens.push(signedIn.json.access_token)
      }
      for (const token of tokens) expect((await send(url, "GET", "/user", undefined, token)).json.email).toBe("two@example.com")
      const served = await server.until("the access-log lines", (lines) => {
        const requests = lines.filter((l) => l["msg"] === "request")
        return requests.length >= 9 ? requests : undefined
      })
      expect(served.every((l) => typeof l["worker"] === "number")).toBe(true)
      const signUpWorker = served.find((l) => l["path"] === "/signup")!["worker"]
      const signInWorkers = new Set(served.filter((l) => l["path"] === "/token").map((l) => l["worker"]))
      expect(signInWorkers.size).toBe(2)
      expect([...signInWorkers].some((w) => w !== signUpWorker)).toBe(true)

      // The IAM gRPC port: health from each connection, and an account registered on one is known on the next.
      for (let i = 0; i < 4; i++) expect(await grpcHealth(grpcAddress)).toBe("SERVING")
      const registering = grpcClients(grpcAddress)
      const registered = await registering.call("AuthService", "Register", { username: "carol", password: "correct horse", email: "carol@example.com" })
      registering.close()
      expect(registered.ok).toBe(true)
      const loggingIn = grpcClients(grpcAddress)
      const login = await loggingIn.call("AuthService", "Login", { username: "carol", password: "correct horse" })
      const admin = await loggingIn.call("AuthService", "Login", { username: "root", password: "root password" })
      loggingIn.close()
      expect(login.ok).toBe(true)
      expect(admin.ok).toBe(true)

      // A worker killed outright is replaced by a new one on the same ports.
      const victim = firstPids[0]!
      process.kill(victim, "SIGKILL")
      const replaced = await server.until("the replacement", (lines) => {
        const restarted = lines.some((l) => l["level"] === "warn" && String(l["msg"]).includes(`(pid ${victim}) exited with signal SIGKILL`))
        const serving = lines.find((l) => /^worker \d+ \(pid \d+\) serving$/.test(String(l["msg"])))
        return restarted && serving !== undefined ? String(serving["msg"]) : undefined
      })
      expect(replaced).toMatch(/^worker 3 /)
      expect(sharedAddress(server.lines, GRPC_LISTENING, 3)).toBe(grpcAddress)
      const pids = childPids(primary)
      expect(pids).toHaveLength(2)
      expect(pids).not.toContain(victim)
      for (let i = 0; i < 4; i++) expect((await send(url, "GET", "/health")).status).toBe(200)
      await server.until("a request served by the replacement", (lines) =>
        lines.some((l) => l["msg"] === "request" && l["worker"] === 3) ? true : undefined)
      for (let i = 0; i < 2; i++) expect(await grpcHealth(grpcAddress)).toBe("SERVING")

      // A request in flight in a worker when the primary gets SIGTERM is answered before everything exits 0.
      expect(await signUpInFlight(url, "inflight@example.com", () => server.child.kill("SIGTERM"))).toMatch(ANSWERED)
      const ended = await server.ended
      expect(ended).toStrictEqual({ code: 0, signal: null })
      expect(pids.filter(alive)).toStrictEqual([])
      expect(server.lines.filter((l) => l["level"] === "error")).toStrictEqual([])
      expect(server.stdout + server.stderr).not.toContain(env["AUTH_JWT_SECRET"])
    } finally {
      server.child.kill("SIGKILL")
    }
  })

  it("a Prometheus scrape is served by the primary with every worker's series; RPCs are logged; each process says when it stopped", async () => {
    const port = await freePort()
    const server = start({
      ...env,
      AUTH_METRICS_ENABLED: "true",
      AUTH_METRICS_EXPORTER: "prometheus",
      AUTH_OTEL_EXPORTER_PROMETHEUS_HOST: "127.0.0.1",
      AUTH_OTEL_EXPORTER_PROMETHEUS_PORT: String(port)
    }, workDir())
    try {
      const url = await server.until("the primary's address line", (lines) => {
        const listening = lines.find((l) => LISTENING.test(String(l["msg"])))
        return listening === undefined ? undefined : LISTENING.exec(String(listening["msg"]))![1]!
      })
      // New connections each time: the cluster deals them out to the workers in turn.
      for (let i = 0; i < 6; i++) expect((await send(url, "GET", "/settings")).status).toBe(200)
      const page = await fetch(`http://127.0.0.1:${port}/`).then((r) => r.text())
      const samples = parsePrometheus(page)
      const settings = samples.filter((s) => s.name === "http_server_requests_total" && s.labels["http_route"] === "/settings")
      expect(settings.reduce((sum, s) => sum + s.value, 0)).toBe(6)
      expect(new Set(settings.map((s) => s.labels["worker"]))).toStrictEqual(new Set(["1", "2"]))
      const runtime = samples.filter((s) => s.name === "nodejs_eventloop_delay_p99")
      expect(new Set(runtime.map((s) => s.labels["worker"]))).toStrictEqual(new Set(["1", "2"]))

      // One line per IAM call on the gRPC port, as the HTTP port logs one per request.
      const client = grpcClients(sharedAddress(server.lines, GRPC_LISTENING, 2)!)
      const refused = await client.call("AuthService", "Login", { username: "nobody", password: "not a password" })
      client.close()
      expect(refused.ok).toBe(false)
      const rpc = await server.until("the RPC's log line", (lines) => lines.find((l) => l["msg"] === "rpc"))
      expect(rpc).toMatchObject({ level: "info", procedure: "/gatehouse.iam.v1.AuthService/Login", code: "UNAUTHENTICATED" })
      expect(typeof rpc["duration_ms"]).toBe("number")
      expect(String(rpc["request_id"])).toMatch(/^[0-9a-f-]{36}$/)
      expect(JSON.stringify(server.lines)).not.toContain("not a password")

      server.child.kill("SIGTERM")
      expect(await server.ended).toStrictEqual({ code: 0, signal: null })
      const stopped = server.lines.filter((l) => String(l["msg"]).startsWith("stopped"))
      expect(stopped.map((l) => l["worker"] ?? "primary").sort()).toStrictEqual([1, 2, "primary"].sort())
    } finally {
      server.child.kill("SIGKILL")
    }
  })

  it("Ctrl-C (SIGINT to the whole process group) stops the workers gracefully, each signalled twice, and exits 0", async () => {
    const server = start(env, workDir(), { group: true })
    try {
      const url = await server.until("the primary's address line", (lines) => {
        const listening = lines.find((l) => LISTENING.test(String(l["msg"])))
        return listening === undefined ? undefined : LISTENING.exec(String(listening["msg"]))![1]!
      })
      const workerPids = childPids(server.child.pid!)
      expect(await signUpInFlight(url, "ctrl-c@example.com", () => process.kill(-server.child.pid!, "SIGINT"))).toMatch(ANSWERED)
      expect(await server.ended).toStrictEqual({ code: 0, signal: null })
      expect(workerPids.filter(alive)).toStrictEqual([])
      expect(server.lines.filter((l) => l["level"] === "error")).toStrictEqual([])
    } finally {
      server.child.kill("SIGKILL")
    }
  })

  it("workers that cannot start (port taken) stop the primary with exit 1 and one line, naming the cause", async () => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve))
    const port = (taken.address() as AddressInfo).port
    try {
      const server = start({ ...env, PORT: String(port) }, workDir())
      const ended = await server.ended
      expect(ended.code).toBe(1)
      const errors = server.lines.filter((l) => l["level"] === "error")
      expect(errors.map((l) => l["msg"])).toStrictEqual([
        `start-up failed: could not listen on 127.0.0.1:${port}: the port is in use (by another Gatehouse?): stop that process, ` +
        "or set PORT (or AUTH_API_PORT) to a free port"
      ])
      // It may hold pg's DeprecationWarning, printed by the other worker when, stopped mid-start, it drops a LISTEN in flight.
      expect(server.stderr).not.toMatch(/EADDRINUSE|\n\s+at /)
    } finally {
      taken.close()
    }
  })

  it("replacements that keep failing to start (database gone) stop the primary with exit 1 and one error line", async () => {
    // The database through a proxy that can stop taking connections, while those it has keep working.
    const database = new URL(env["DATABASE_URL"]!)
    const open = new Set<Socket>()
    const proxy = createServer((client) => {
      const upstream = connect(Number(database.port), database.hostname)
      for (const socket of [client, upstream]) {
        open.add(socket)
        socket.on("error", () => socket.destroy())
        socket.on("close", () => open.delete(socket))
      }
      client.pipe(upstream).pipe(client)
    })
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))
    const proxied = new URL(database)
    proxied.port = String((proxy.address() as AddressInfo).port)
    const server = start({ ...env, DATABASE_URL: proxied.toString() }, workDir())
    try {
      await server.until("both workers", (lines) => (lines.some((l) => LISTENING.test(String(l["msg"]))) ? true : undefined))
      proxy.close()
      process.kill(childPids(server.child.pid!)[0]!, "SIGKILL")
      const ended = await server.ended
      expect(ended.code).toBe(1)
      // The primary's lines: the surviving worker may warn too, of its own failing database polls.
      const primaryLines = server.lines.filter((l) => !("worker" in l))
      const warnings = primaryLines.filter((l) => l["level"] === "warn").map((l) => String(l["msg"]))
      expect(warnings).toHaveLength(5)
      expect(warnings[0]).toMatch(/^worker \d \(pid \d+\) exited with signal SIGKILL; starting another in 500ms$/)
      expect(warnings.slice(1)).toStrictEqual([3, 4, 5, 6].map((id, i) =>
        expect.stringMatching(new RegExp(`^worker ${id} \\(pid \\d+\\) could not start: could not connect to PostgreSQL: .*ECONNREFUSED.*; trying again in ${1000 * 2 ** i}ms$`))))
      const errors = primaryLines.filter((l) => l["level"] === "error").map((l) => String(l["msg"]))
      expect(errors).toStrictEqual([expect.stringMatching(
        /^stopping: workers failed to start 5 times in a row, the last: could not connect to PostgreSQL: .*ECONNREFUSED/)])
    } finally {
      server.child.kill("SIGKILL")
      for (const socket of open) socket.destroy()
    }
  }, 90_000)
})

describe.skipIf(Option.isSome(externalDatabaseUrl))("AUTH_WORKERS in the embedded default", () => {
  it("is ignored with one warning: the embedded database serves from one process", async () => {
    const dir = workDir()
    const server = start({ AUTH_DATA_DIR: join(dir, "data"), PORT: "0", AUTH_IAM_GRPC_PORT: "0", AUTH_WORKERS: "2" }, dir)
    try {
      await server.until("the server", (lines) => (lines.some((l) => LISTENING.test(String(l["msg"]))) ? true : undefined), 60_000)
      expect(childPids(server.child.pid!)).toStrictEqual([])
      expect(server.lines.filter((l) => l["level"] === "warn").map((l) => l["msg"])).toStrictEqual([
        "AUTH_WORKERS=2 is ignored: the embedded database serves from one process (set DATABASE_URL to use several)"
      ])
      expect(server.lines.some((l) => "worker" in l)).toBe(false)
      server.child.kill("SIGTERM")
      expect((await server.ended).code).toBe(0)
    } finally {
      server.child.kill("SIGKILL")
    }
  })
})
