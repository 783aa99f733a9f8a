import { execFile, spawn } from "node:child_process"
import { closeSync, openSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import pg from "pg"

const run = promisify(execFile)

export interface Postgres {
  readonly url: string
  readonly dir: string
  /** The postmaster: the root of every PostgreSQL process whose CPU is counted. */
  readonly postmasterPid: () => number
}

const envFile = (dir: string): Record<string, string> =>
  Object.fromEntries(readFileSync(join(dir, "pg.env"), "utf8").split("\n").flatMap((line) => {
    const eq = line.indexOf("=")
    return eq > 0 ? [[line.slice(0, eq), line.slice(eq + 1)]] : []
  }))

const withClient = async (url: string, use: (client: pg.Client) => Promise<unknown>): Promise<void> => {
  const client = new pg.Client({ connectionString: url })
  // A server shutting down while we are connected must fail the query, not crash the process.
  client.on("error", () => undefined)
  await client.connect()
  try {
    await use(client)
  } finally {
    await client.end()
  }
}

/**
 * A throwaway PostgreSQL 15 from scripts/pg.sh, restarted once with pg_stat_statements preloaded so every run can
 * count the statements it caused, and with `settings` (ALTER SYSTEM, in force after that restart). `onStarted`
 * receives the stop step as soon as there is something to stop.
 */
export const startPostgres = async (
  repoRoot: string,
  dir: string,
  onStarted: (stop: () => Promise<void>) => void,
  settings: Readonly<Record<string, string>> = {}
): Promise<Postgres> => {
  const pgSh = join(repoRoot, "scripts", "pg.sh")
  const started = run("bash", [pgSh, "start", dir], { maxBuffer: 1 << 20 })
  onStarted(async () => {
    await started.catch(() => undefined)
    await run("bash", [pgSh, "stop", dir])
  })
  const { stdout } = await started
  const url = /^DATABASE_URL=(.+)$/m.exec(stdout)?.[1]
  if (url === undefined) throw new Error(`scripts/pg.sh start printed no DATABASE_URL: ${stdout}`)
  const env = envFile(dir)

  // pg_stat_statements.track_utility is on by default: BEGIN and COMMIT are counted, as the round trips they are.
  await withClient(url, async (client) => {
    await client.query("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
    for (const [name, value] of Object.entries(settings)) {
      if (!/^[a-z_]+$/.test(name) || !/^[0-9A-Za-z_.]+$/.test(value)) throw new Error(`not a PostgreSQL setting: ${name} = ${value}`)
      await client.query(`ALTER SYSTEM SET ${name} = '${value}'`)
    }
  })

  // pg_ctl runs as the server's OS user, as pg.sh does: initdb and postgres refuse root. Its output goes to a
  // file, never to a pipe of ours that the daemonised server would inherit and hold open.
  const asUser = process.getuid?.() === 0 && env.PG_OS_USER !== "root" ? ["runuser", "-u", env.PG_OS_USER!, "--"] : []
  const pgCtl = [join(env.PG_BIN!, "pg_ctl"), "-D", env.PG_DATA!, "-l", join(dir, "postgres.log"), "-w", "-t", "30", "-m", "fast", "restart"]
  const command = [...asUser, ...pgCtl]
  const out = openSync(join(dir, "restart.log"), "a")
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(command[0]!, command.slice(1), { cwd: "/", stdio: ["ignore", out, out] })
    child.once("error", reject)
    child.once("exit", resolve)
  }).finally(() => closeSync(out))
  if (code !== 0) {
    throw new Error(`could not restart PostgreSQL with pg_stat_statements (pg_ctl exit ${code}): ${readFileSync(join(dir, "restart.log"), "utf8")}`)
  }

  await withClient(url, (client) => client.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements"))

  return {
    url,
    dir,
    postmasterPid: () => Number(readFileSync(join(env.PG_DATA!, "postmaster.pid"), "utf8").split("\n")[0])
  }
}
