import { DEFAULT_SOAK_MS, parseSoakDuration } from "./soak/SoakDuration.js"

/** Everything a run can be told, from the command line and BENCH_* variables. */
export interface BenchOptions {
  /** --quick: one short round per side, to check the harness works. */
  readonly quick: boolean
  /** --sql: only count the statements per request on each side, list them, and stop. */
  readonly sqlOnly: boolean
  /** --only=a,b: just these scenarios (ids as in Scenarios.ts). */
  readonly only: ReadonlyArray<string> | undefined
  readonly warmupMs: number
  readonly durationMs: number
  readonly rounds: number
  /** node:cluster workers for each side (AUTH_WORKERS); BENCH_WORKERS, default os.availableParallelism(). */
  readonly workers: number
  /** Concurrent requests for the cheap scenarios. */
  readonly connections: number
  /** Concurrent requests where bcrypt bounds throughput: more would only queue on the threadpool. */
  readonly bcryptConnections: number
  /** Concurrent password sign-ins behind the GET /user load in the burst scenario. */
  readonly burstConnections: number
  /**
   * --size=1m: instead of the side-by-side table, Gatehouse against itself: the size scenarios at 200 users, then
   * again after SQL adds this many users (with sessions, refresh tokens and audit rows in proportion).
   */
  readonly size: number | undefined
  /** Concurrent requests of the size scenarios (BENCH_SIZE_CONNECTIONS). */
  readonly sizeConnections: number
  /**
   * --soak[=10m]: instead of the side-by-side table, Gatehouse alone at its default settings under a steady mixed
   * load for this many milliseconds, its processes' RSS sampled throughout.
   */
  readonly soak: number | undefined
  /**
   * --memory-limit=250 (with --soak): the soak's server runs in a memory cgroup limited to this many MB, as a
   * container's limit would hold it (MemoryCgroup.ts).
   */
  readonly memoryLimitMb: number | undefined
}

export const USAGE = `npm run bench [-- --quick | --sql | --only=user,refresh | --size=1m | --soak[=10m] [--memory-limit=MB]]

  --quick         one short round per side (0.5 s warm-up, 2 s measured): checks the harness
  --sql           count the SQL statements per request on both sides, list them, and stop
  --only=IDS      run only these scenarios (signup, password, refresh, user, user-burst, iam-login,
                  iam-validate, floor)
  --size=N        Gatehouse alone, at 200 users and again after adding N users by SQL (1m, 100k, 5000):
                  each size scenario's CPU and p99 at both sizes, their ratio, and the database size
  --soak[=TIME]   Gatehouse alone at its default settings under a steady mixed load (GET /user, refresh
                  chains, sign-ups; 10 in flight) for TIME (default 10m; 90s, 1h, 1m30s): RSS per process
                  sampled every 10 s, its growth, and whether it grew beyond noise
  --memory-limit=MB  with --soak: run the server in a memory cgroup of MB (as a container's limit; needs root):
                  what it was charged (idle, after, peak) and the processes the kernel killed

  BENCH_DURATION=8            measured seconds per run        BENCH_WARMUP=2   warm-up seconds per run
  BENCH_ROUNDS=2              runs per side, alternating      BENCH_WORKERS    processes per side (default: CPUs)
  BENCH_CONNECTIONS=50        concurrency of cheap requests   BENCH_BCRYPT_CONNECTIONS=16   of bcrypt-bound ones
  BENCH_BURST_CONNECTIONS=8   sign-ins behind GET /user in the burst scenario
  BENCH_SIZE_CONNECTIONS=10   concurrency of every size scenario
`

const positive = (env: NodeJS.ProcessEnv, name: string, fallback: number): number => {
  const raw = env[name]
  if (raw === undefined || raw === "") return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(raw)}`)
  return value
}

export const parseBenchOptions = (argv: ReadonlyArray<string>, env: NodeJS.ProcessEnv, cpus: number): BenchOptions => {
  const isSoak = (a: string) => a === "--soak" || a.startsWith("--soak=")
  const unknown = argv.filter((a) =>
    a !== "--quick" && a !== "--sql" && !a.startsWith("--only=") && !a.startsWith("--size=") && !isSoak(a) && !a.startsWith("--memory-limit=")
  )
  if (unknown.length > 0) throw new Error(`unknown argument ${unknown[0]}\n\n${USAGE}`)
  const soak = argv.find(isSoak)
  if (soak !== undefined && argv.some((a) => a.startsWith("--size="))) throw new Error(`--soak and --size are runs of their own: give one\n\n${USAGE}`)
  const quick = argv.includes("--quick")
  const only = argv.find((a) => a.startsWith("--only="))?.slice("--only=".length).split(",").filter((s) => s !== "")
  const size = argv.find((a) => a.startsWith("--size="))?.slice("--size=".length)
  const limit = argv.find((a) => a.startsWith("--memory-limit="))?.slice("--memory-limit=".length)
  if (limit !== undefined && soak === undefined) throw new Error(`--memory-limit holds the soak's server: give it with --soak\n\n${USAGE}`)
  const memoryLimitMb = limit === undefined ? undefined : Number(limit)
  if (memoryLimitMb !== undefined && !(Number.isSafeInteger(memoryLimitMb) && memoryLimitMb >= 64)) {
    throw new Error(`--memory-limit wants whole MB, at least 64 (250, 512), got ${JSON.stringify(limit)}`)
  }
  return {
    quick,
    sqlOnly: argv.includes("--sql"),
    only,
    warmupMs: positive(env, "BENCH_WARMUP", quick ? 0.5 : 2) * 1000,
    durationMs: positive(env, "BENCH_DURATION", quick ? 2 : 8) * 1000,
    rounds: Math.round(positive(env, "BENCH_ROUNDS", quick ? 1 : 2)),
    workers: Math.round(positive(env, "BENCH_WORKERS", cpus)),
    connections: Math.round(positive(env, "BENCH_CONNECTIONS", 50)),
    bcryptConnections: Math.round(positive(env, "BENCH_BCRYPT_CONNECTIONS", 16)),
    burstConnections: Math.round(positive(env, "BENCH_BURST_CONNECTIONS", 8)),
    size: size === undefined ? undefined : parseSize(size),
    sizeConnections: Math.round(positive(env, "BENCH_SIZE_CONNECTIONS", 10)),
    soak: soak === undefined ? undefined : soak === "--soak" ? DEFAULT_SOAK_MS : parseSoakDuration(soak.slice("--soak=".length)),
    memoryLimitMb
  }
}

/** "1m", "250k" or a plain count of users; at least 1,000 so that the big size is big. */
export const parseSize = (raw: string): number => {
  const match = /^(\d+)([km]?)$/i.exec(raw.trim())
  const value = match === null ? Number.NaN : Number(match[1]) * ({ "": 1, k: 1_000, m: 1_000_000 }[match[2]!.toLowerCase()] ?? Number.NaN)
  if (!Number.isSafeInteger(value) || value < 1_000) throw new Error(`--size wants a count of users of at least 1000 (1m, 100k, 5000), got ${JSON.stringify(raw)}`)
  return value
}
