import { type ChildProcess, spawn } from "node:child_process"
import { createWriteStream } from "node:fs"
import { processTree } from "./ProcessCpu.js"

export interface ServerProcess {
  readonly name: string
  readonly pid: number
  readonly logPath: string
  /** Stops the process and every process it started (cluster workers), by their ids. */
  readonly stop: () => Promise<void>
}

const exited = (child: ChildProcess): Promise<void> =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once("exit", () => resolve()))

const within = <A>(ms: number, promise: Promise<A>): Promise<A | "timeout"> =>
  Promise.race([promise, new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), ms).unref())])

const isAlive = (pid: number, startTicks: number): boolean =>
  processTree(pid).some((p) => p.pid === pid && p.startTicks === startTicks)

/**
 * Starts `node <script> [args]` with its output in `logPath`, and resolves once `ready` says so (or the process
 * prints a line "ready"). The process title names it, so it is easy to find in ps and is not matched by anyone's
 * `pkill -f dist/main.js`.
 */
export const startServer = async (options: {
  readonly name: string
  readonly script: string
  readonly args?: ReadonlyArray<string>
  readonly env: NodeJS.ProcessEnv
  readonly cwd: string
  readonly logPath: string
  readonly ready?: () => Promise<boolean>
  readonly timeoutMs?: number
  /** The node to run (default: the bench's own). */
  readonly executable?: string
  /** Called with the pid as soon as the process exists, before it has loaded anything (e.g. to move it to a cgroup). */
  readonly onSpawn?: (pid: number) => void
}): Promise<ServerProcess> => {
  const log = createWriteStream(options.logPath, { flags: "a" })
  const child = spawn(options.executable ?? process.execPath, [`--title=gatehouse-bench-${options.name}`, options.script, ...(options.args ?? [])], {
    cwd: options.cwd,
    env: options.env,
    stdio: ["ignore", "pipe", "pipe"]
  })
  let printedReady = false
  child.stdout!.on("data", (chunk: Buffer) => {
    log.write(chunk)
    if (/^ready$/m.test(chunk.toString("utf8"))) printedReady = true
  })
  child.stderr!.on("data", (chunk: Buffer) => log.write(chunk))
  const pid = child.pid!
  try {
    options.onSpawn?.(pid)
  } catch (error) {
    child.kill("SIGKILL")
    log.end()
    throw error
  }

  const stop = async (): Promise<void> => {
    // The tree is read before the signal: once the primary is gone its workers are no longer its children.
    const members = processTree(pid).filter((p) => p.pid !== pid)
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM")
      if (await within(5000, exited(child)) === "timeout") {
        child.kill("SIGKILL")
        await within(5000, exited(child))
      }
    }
    for (const member of members) {
      if (isAlive(member.pid, member.startTicks)) process.kill(member.pid, "SIGKILL")
    }
    log.end()
  }

  const deadline = Date.now() + (options.timeoutMs ?? 60_000)
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      log.end()
      throw new Error(`${options.name} exited during start-up (${child.signalCode ?? child.exitCode}); see ${options.logPath}`)
    }
    if (printedReady || (options.ready !== undefined && await options.ready().catch(() => false))) break
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`${options.name} was not ready after ${(options.timeoutMs ?? 60_000) / 1000} s; see ${options.logPath}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  let stopping = false
  child.once("exit", (code, signal) => {
    // Ctrl-C reaches the servers too; that exit is expected.
    if (!stopping && signal !== "SIGINT") process.stderr.write(`\n!! ${options.name} (pid ${pid}) exited unexpectedly (${signal ?? code}); see ${options.logPath}\n`)
  })
  return {
    name: options.name,
    pid,
    logPath: options.logPath,
    stop: () => {
      stopping = true
      return stop()
    }
  }
}
