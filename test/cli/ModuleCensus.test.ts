import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option, Scope } from "effect"
import { externalDatabaseUrl, freshDatabaseUrl } from "../support/TestDatabase.js"

/*
 * Which modules each kind of process loads, read as the program runs: scripts/memory-census.mjs, given to node with
 * --import (node:cluster passes it on to the workers), records every module each process resolves. What a process
 * never loads costs it no memory: these pin the modules a configuration does not need out of the processes that
 * do not run them. (Not a memory threshold: what they hold is measured in docs/plans/issue-30-memory.md.)
 */

const MAIN = fileURLToPath(new URL("../../dist/main.js", import.meta.url))
const CENSUS = pathToFileURL(fileURLToPath(new URL("../../scripts/memory-census.mjs", import.meta.url))).href

/** The IAM service's transport and token stack, which a server without it has no use for. */
const IAM_STACK = ["@connectrpc/connect", "@connectrpc/connect-node", "@bufbuild/protobuf", "@effect/rpc", "paseto", "gatehouse:iam/grpc/GrpcServer.js"]
/** The database driver and the start-up work (migrations, the IAM admin's password hash). */
const DATABASE_STACK = ["@effect/sql", "@effect/sql-pg", "pg", "@node-rs/bcrypt", "gatehouse:platform/sql/Migrator.js"]

/** The modules in each file of the bundle (dist/bundle-modules.json, written by scripts/bundle.mjs). */
const BUNDLED: Readonly<Record<string, ReadonlyArray<string>>> = JSON.parse(
  readFileSync(fileURLToPath(new URL("../../dist/bundle-modules.json", import.meta.url)), "utf8")
)

/**
 * What one process loaded: packages by name, and the program's own modules as "gatehouse:<path>.js". A file of the
 * bundle stands for every module in it; a package outside it (native addons, lazily required ones) for itself.
 */
const loaded = (file: string): ReadonlySet<string> =>
  new Set(readFileSync(file, "utf8").split("\n").filter(Boolean).flatMap((line) => {
    const url = line.split(" ")[0]!
    const modules = url.lastIndexOf("/node_modules/")
    if (modules >= 0) {
      const [scope, name] = url.slice(modules + "/node_modules/".length).split("/")
      return [scope!.startsWith("@") ? `${scope}/${name}` : scope!]
    }
    const dist = url.lastIndexOf("/dist/")
    return dist >= 0 ? (BUNDLED[url.slice(dist + "/dist/".length)] ?? [url]) : [url]
  }))

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** Runs the built program under the census until it serves, then stops it; each process's modules by pid. */
/** The processes whose parent is `pid`, from /proc. */
const childrenOf = (pid: number): ReadonlyArray<number> =>
  readdirSync("/proc").filter((name) => /^\d+$/.test(name)).map(Number).filter((candidate) => {
    try {
      const stat = readFileSync(`/proc/${candidate}/stat`, "utf8")
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid
    } catch {
      return false
    }
  })

/** V8's new space of each process (MB, by pid), from the census each writes on SIGUSR2 (scripts/memory-census.mjs). */
const newSpaces = async (dir: string, pids: ReadonlyArray<number>): Promise<ReadonlyMap<number, number>> => {
  for (const pid of pids) process.kill(pid, "SIGUSR2")
  const file = (pid: number) => join(dir, `census-${pid}-1.json`)
  const deadline = Date.now() + 10_000
  while (!pids.every((pid) => readdirSync(dir).includes(`census-${pid}-1.json`))) {
    if (Date.now() > deadline) throw new Error("no census written")
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  await new Promise((resolve) => setTimeout(resolve, 200))
  return new Map(pids.map((pid) => [pid, (JSON.parse(readFileSync(file(pid), "utf8")) as { heapMb: { spaces: { new_space: { size: number } } } }).heapMb.spaces.new_space.size]))
}

interface Census {
  readonly root: number
  readonly byPid: ReadonlyMap<number, ReadonlySet<string>>
  /** Each serving process's new space once the server listens. */
  readonly newSpaceMb: ReadonlyMap<number, number>
}

const census = async (env: Record<string, string>): Promise<Census> => {
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-census-"))
  dirs.push(dir)
  const child: ChildProcess = spawn(process.execPath, ["--import", CENSUS, MAIN], {
    cwd: dir,
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: process.env["HOME"] ?? "",
      MEMORY_CENSUS_DIR: dir,
      MEMORY_CENSUS_MODULES: "1",
      PORT: "0",
      AUTH_API_HOST: "127.0.0.1",
      AUTH_IAM_GRPC_HOST: "127.0.0.1",
      AUTH_IAM_GRPC_PORT: "0",
      ...env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let newSpaceMb: ReadonlyMap<number, number> = new Map()
  let output = ""
  child.stdout!.on("data", (d) => (output += d))
  child.stderr!.on("data", (d) => (output += d))
  const ended = new Promise<void>((resolve) => child.on("close", () => resolve()))
  try {
    const deadline = Date.now() + 150_000
    while (!/"msg":"Listening on http/.test(output)) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the server did not start:\n${output}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    newSpaceMb = await newSpaces(dir, [child.pid!, ...childrenOf(child.pid!)])
  } finally {
    child.kill("SIGTERM")
    await ended
  }
  const byPid = new Map(readdirSync(dir).flatMap((name) => {
    const pid = /^esm-(\d+)\.txt$/.exec(name)?.[1]
    return pid === undefined ? [] : [[Number(pid), loaded(join(dir, name))] as const]
  }))
  return { root: child.pid!, byPid, newSpaceMb }
}

/** Under V8's default a process's start-up grows the new space to 32 MB; held, it stays at 1–2 MB. */
const NEW_SPACE_HELD_MB = 8

const missing = (modules: ReadonlySet<string>, names: ReadonlyArray<string>) => names.filter((name) => !modules.has(name))
const present = (modules: ReadonlySet<string>, names: ReadonlyArray<string>) => names.filter((name) => modules.has(name))

describe.skipIf(Option.isSome(externalDatabaseUrl))("the modules of one process (the embedded default)", () => {
  // Each starts an embedded database, which on a busy machine takes tens of seconds.
  it("loads the IAM service's stack when the IAM service is served (the census sees it)", async () => {
    const on = await census({ AUTH_DATA_DIR: "data" })
    expect(on.byPid.size).toBe(1)
    expect(missing(on.byPid.get(on.root)!, IAM_STACK)).toStrictEqual([])
  }, 180_000)

  it("loads none of it when the IAM service is off", async () => {
    const off = await census({ AUTH_DATA_DIR: "data", AUTH_IAM_ENABLED: "false" })
    expect(off.byPid.size).toBe(1)
    const modules = off.byPid.get(off.root)!
    expect(modules.has("gatehouse:cli/Serve.js")).toBe(true)
    expect(present(modules, IAM_STACK)).toStrictEqual([])
    // Loading the modules and starting the embedded database would grow V8's new space to 32 MB, which an idle
    // server then keeps (YoungGeneration.ts); held until the server listens, it is still at its initial size.
    expect([...off.newSpaceMb.values()].map((mb) => mb < NEW_SPACE_HELD_MB)).toStrictEqual([true])
  }, 180_000)
})

describe.skipIf(Option.isNone(externalDatabaseUrl))("the modules of a cluster's processes (PostgreSQL)", () => {
  it("the primary loads no database driver and no routes; the start-up process does; workers without IAM load no IAM stack; none keeps its start-up's young generation", { timeout: 180_000 }, async () => {
    const scope = Effect.runSync(Scope.make())
    try {
      const fresh = await Effect.runPromise(Scope.extend(freshDatabaseUrl(Option.getOrThrow(externalDatabaseUrl)), scope))
      const { byPid, newSpaceMb, root } = await census({
        DATABASE_URL: fresh.url,
        AUTH_DB_DRIVER: "postgres",
        AUTH_SMTP_ADMIN_EMAIL: "admin@example.com",
        AUTH_SMTP_HOST: "127.0.0.1",
        AUTH_SMTP_PORT: "2525",
        AUTH_SITE_URL: "http://localhost:3000",
        API_EXTERNAL_URL: "http://localhost:9999",
        AUTH_JWT_SECRET: "census-test-jwt-secret-0123456789-abcdefghij",
        AUTH_IAM_ENABLED: "false",
        AUTH_RATE_LIMIT_HEADER: "X-Real-IP",
        AUTH_WORKERS: "2"
      })
      const primary = byPid.get(root)!
      const others = [...byPid].filter(([pid]) => pid !== root).map(([, modules]) => modules)
      const startup = others.filter((modules) => modules.has("gatehouse:cli/PrimaryStartup.js"))
      const workers = others.filter((modules) => modules.has("gatehouse:cli/Serve.js"))
      expect([startup.length, workers.length, others.length]).toStrictEqual([1, 2, 3])

      expect(primary.has("gatehouse:platform/process/Workers.js")).toBe(true)
      expect(present(primary, [...DATABASE_STACK, "gatehouse:cli/ServerLive.js", "gatehouse:auth/AuthHttp.js"])).toStrictEqual([])
      expect(missing(startup[0]!, DATABASE_STACK)).toStrictEqual([])
      for (const worker of workers) {
        expect(worker.has("@effect/sql-pg")).toBe(true)
        expect(present(worker, IAM_STACK)).toStrictEqual([])
      }
      // The primary and both workers, listening: none kept the new space its start-up would have grown.
      expect([...newSpaceMb.values()].map((mb) => mb < NEW_SPACE_HELD_MB)).toStrictEqual([true, true, true])
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })
})
