import { readFileSync, readlinkSync } from "node:fs"
import { uniqueResidentMb } from "./PageFrames.js"
import { processTree } from "./ProcessCpu.js"
import { meanOf } from "./report/Stats.js"

/** One process's memory, in MB: resident (RSS) and its proportional share of pages shared with others (PSS). */
export interface ProcessMemory {
  readonly rssMb: number
  readonly pssMb: number
}

/** Rss and Pss of /proc/<pid>/smaps_rollup (kB); undefined when either is missing. */
export const parseSmapsRollup = (text: string): ProcessMemory | undefined => {
  const field = (name: string): number | undefined => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)
    return match === null ? undefined : Number(match[1]) / 1024
  }
  const rssMb = field("Rss")
  const pssMb = field("Pss")
  return rssMb === undefined || pssMb === undefined ? undefined : { rssMb, pssMb }
}

const readMemory = (pid: number): ProcessMemory | undefined => {
  try {
    return parseSmapsRollup(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))
  } catch {
    return undefined // gone between listing and reading
  }
}

/** The executable a process runs (/proc/<pid>/exe), undefined when it is gone or not ours to read. */
const executableOf = (pid: number): string | undefined => {
  try {
    return readlinkSync(`/proc/${pid}/exe`)
  } catch {
    return undefined
  }
}

/** A process of a server's tree: its pid and when it started (clock ticks since boot, /proc/<pid>/stat). */
export interface TreeMember {
  readonly pid: number
  readonly startTicks: number
}

/**
 * The roles of a server's processes: "single" for a server of one process, else "primary" (the root) and
 * "worker-1", "worker-2", … in the order they started (a replacement takes the place of the worker it replaced).
 * `members` are the root's descendants that run the server's own executable.
 */
export const assignRoles = (rootPid: number, members: ReadonlyArray<TreeMember>): ReadonlyArray<{ readonly role: string; readonly pid: number }> => {
  const workers = members.filter((p) => p.pid !== rootPid).sort((a, b) => a.startTicks - b.startTicks || a.pid - b.pid)
  return [
    { role: workers.length === 0 ? "single" : "primary", pid: rootPid },
    ...workers.map((w, i) => ({ role: `worker-${i + 1}`, pid: w.pid }))
  ]
}

/** One process of a server's tree, with its role, pid and memory. */
export interface ProcessReading extends ProcessMemory {
  readonly role: string
  readonly pid: number
}

/**
 * Each process of a server's tree that runs the server's own executable (node), by role (assignRoles).
 *
 * The executable is read from /proc/<pid>/exe, not from /proc/<pid>/comm: comm is the process title (its first 15
 * bytes), and the bench starts every server with --title=gatehouse-bench-<name>, which node:cluster passes on to
 * each worker. A test of comm === "node" therefore matched no process of a bench server: the workers were left
 * out and the primary alone was reported, as "single".
 */
export const treeProcesses = (rootPid: number): ReadonlyArray<ProcessReading> => {
  const executable = executableOf(rootPid)
  if (executable === undefined) return []
  const members = processTree(rootPid).filter((p) => p.pid === rootPid || executableOf(p.pid) === executable)
  return assignRoles(rootPid, members).flatMap(({ pid, role }) => {
    const memory = readMemory(pid)
    return memory === undefined ? [] : [{ role, pid, ...memory }]
  })
}

/**
 * One reading of a server's tree: each node process by role (treeProcesses) with its memory, and the physical memory
 * the tree holds with each page counted once (PageFrames; undefined where frame numbers are hidden: not root).
 */
export interface TreeMemory {
  readonly processes: ReadonlyMap<string, ProcessMemory>
  readonly uniqueMb: number | undefined
}

export const treeMemory = (rootPid: number, countPages = true): TreeMemory => {
  const processes = treeProcesses(rootPid)
  return {
    processes: new Map(processes.map(({ pssMb, role, rssMb }) => [role, { rssMb, pssMb }])),
    uniqueMb: processes.length === 0 || !countPages ? undefined : uniqueResidentMb(processes.map((p) => p.pid))
  }
}

/** The row of the tree's memory with each page counted once (TreeMemory.uniqueMb), after "total". */
export const PAGES_ONCE = "total, each page once"

/** Per role: the RSS at idle, and its mean and max over the samples taken under load. */
export interface MemoryRow {
  readonly role: string
  readonly idleRssMb: number | undefined
  readonly loadMeanRssMb: number | undefined
  readonly loadMaxRssMb: number | undefined
  readonly loadMaxPssMb: number | undefined
}

/**
 * The rows of one server: every role seen at idle or under load, "total" (the sum of RSS and PSS per sample), then
 * PAGES_ONCE when any reading had it (its RSS columns hold the tree's memory with each page once; no PSS).
 */
export const memoryRows = (idleTree: TreeMemory, trees: ReadonlyArray<TreeMemory>): ReadonlyArray<MemoryRow> => {
  const idle = idleTree.processes
  const samples = trees.map((t) => t.processes)
  const withTotal = (sample: ReadonlyMap<string, ProcessMemory>): ReadonlyMap<string, ProcessMemory> =>
    new Map([...sample, ["total", [...sample.values()].reduce((a, m) => ({ rssMb: a.rssMb + m.rssMb, pssMb: a.pssMb + m.pssMb }), { rssMb: 0, pssMb: 0 })]])
  const idleAll = withTotal(idle)
  const loadAll = samples.map(withTotal)
  const roles = [...new Set([...idleAll.keys(), ...loadAll.flatMap((s) => [...s.keys()])])]
    .sort((a, b) => (a === "total" ? 1 : b === "total" ? -1 : a.localeCompare(b, "en", { numeric: true })))
  const rows = roles.map((role) => {
    const seen = loadAll.flatMap((s) => (s.has(role) ? [s.get(role)!] : []))
    const rss = seen.map((m) => m.rssMb)
    return {
      role,
      idleRssMb: idleAll.get(role)?.rssMb,
      loadMeanRssMb: meanOf(rss),
      loadMaxRssMb: rss.length === 0 ? undefined : Math.max(...rss),
      loadMaxPssMb: seen.length === 0 ? undefined : Math.max(...seen.map((m) => m.pssMb))
    }
  })
  const unique = trees.flatMap((t) => (t.uniqueMb === undefined ? [] : [t.uniqueMb]))
  if (idleTree.uniqueMb === undefined && unique.length === 0) return rows
  return [...rows, {
    role: PAGES_ONCE,
    idleRssMb: idleTree.uniqueMb,
    loadMeanRssMb: meanOf(unique),
    loadMaxRssMb: unique.length === 0 ? undefined : Math.max(...unique),
    loadMaxPssMb: undefined
  }]
}

/**
 * Samples a server's tree every `intervalMs` until stopped, counting its pages once (uniqueResidentMb) every
 * `countPagesEvery`-th sample only: that reading costs ~60 ms of the bench's CPU for a tree of three processes, and
 * the bench process is also the load generator.
 */
export class MemorySampler {
  private readonly samples: Array<TreeMemory> = []
  private readonly timer: NodeJS.Timeout
  constructor(private readonly rootPid: number, intervalMs = 1000, countPagesEvery = 5) {
    let n = 0
    this.timer = setInterval(() => this.samples.push(treeMemory(this.rootPid, n++ % countPagesEvery === 0)), intervalMs)
    this.timer.unref()
  }
  stop(): ReadonlyArray<TreeMemory> {
    clearInterval(this.timer)
    return this.samples
  }
}
