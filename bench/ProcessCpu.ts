import { readdirSync, readFileSync } from "node:fs"

/** The fields of /proc/<pid>/stat the CPU accounting needs; times in clock ticks. */
export interface ProcStat {
  readonly pid: number
  readonly ppid: number
  /** utime + stime: this process's own CPU. */
  readonly ownTicks: number
  /** cutime + cstime: CPU of children it has reaped (workers or backends that exited). */
  readonly childTicks: number
  /** Start time since boot, in ticks: with the pid, identifies a process even after its pid is reused. */
  readonly startTicks: number
  /** Exited, not yet reaped: its threads are gone, its times are still there. */
  readonly zombie: boolean
}

/**
 * Parses one /proc/<pid>/stat line. The command name (field 2) is in parentheses and may itself contain spaces
 * and parentheses, so the numeric fields are counted from the last ")".
 */
export const parseProcStat = (line: string): ProcStat | undefined => {
  const close = line.lastIndexOf(")")
  if (close < 0) return undefined
  const pid = Number(line.slice(0, line.indexOf(" ")))
  // After ")": state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17) ... starttime(22).
  const rest = line.slice(close + 2).trim().split(/\s+/)
  const field = (n: number): number => Number(rest[n - 3])
  const stat = {
    pid,
    ppid: field(4),
    ownTicks: field(14) + field(15),
    childTicks: field(16) + field(17),
    startTicks: field(22)
  }
  return Object.values(stat).every(Number.isFinite) ? { ...stat, zombie: rest[0] === "Z" } : undefined
}

const readStat = (pid: number): ProcStat | undefined => {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return undefined // gone between listing and reading
  }
}

const allStats = (): ReadonlyArray<ProcStat> =>
  readdirSync("/proc").flatMap((name) => (/^\d+$/.test(name) ? [readStat(Number(name))].filter((s) => s !== undefined) : []))

/** The root and every descendant of it, from one listing of /proc. */
export const processTree = (rootPid: number): ReadonlyArray<ProcStat> => {
  const stats = allStats()
  const children = new Map<number, Array<ProcStat>>()
  for (const s of stats) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s])
  const root = stats.find((s) => s.pid === rootPid)
  if (root === undefined) return []
  const tree: Array<ProcStat> = []
  const queue = [root]
  while (queue.length > 0) {
    const next = queue.shift()!
    tree.push(next)
    queue.push(...(children.get(next.pid) ?? []))
  }
  return tree
}

export interface TreeCpu {
  readonly ms: number
  readonly processes: number
}

/**
 * A live process's own CPU time in milliseconds: the sum of its threads' run time in /proc/<pid>/task/<tid>/schedstat,
 * in nanoseconds. utime and stime come in 10 ms ticks rounded down per process, and PostgreSQL spreads a window's
 * work over dozens of backends that each gain a tick or two: the rounding alone would be as large as what is measured.
 * (Threads that exited are not counted; Node's and PostgreSQL's threads live as long as their process.)
 */
const ownMs = (stat: ProcStat, ticksPerSecond: number): number => {
  const ticks = (stat.ownTicks * 1000) / ticksPerSecond
  if (stat.zombie) return ticks
  try {
    const tasks = readdirSync(`/proc/${stat.pid}/task`)
    return tasks.length === 0 ? ticks : tasks.reduce(
      (sum, tid) => sum + Number(readFileSync(`/proc/${stat.pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]) / 1e6,
      0
    )
  } catch {
    return ticks // no schedstat, or the process just exited
  }
}

/**
 * All CPU a process tree has used so far: every live member's own time plus the time of the children each one has
 * reaped (cutime and cstime, in ticks: a worker or backend that exited is counted there, rounded once). A process
 * that exits between two readings moves from its own time into its parent's child time, so the difference of two
 * readings still counts it once.
 */
export const treeCpu = (rootPid: number, ticksPerSecond: number): TreeCpu => {
  let reading: TreeCpu = { ms: 0, processes: 0 }
  // A child reaped while /proc is being read is in neither its own times (gone) nor its parent's child times (the
  // parent was read first): idle pool connections closing make PostgreSQL backends exit mid-run. So the reading
  // is taken again until the root reaped nobody meanwhile. (The trees measured here are a root and its children.)
  for (let attempt = 0; attempt < 5; attempt++) {
    const reapedBefore = readStat(rootPid)?.childTicks
    const tree = processTree(rootPid)
    reading = {
      ms: tree.reduce((sum, s) => sum + ownMs(s, ticksPerSecond) + (s.childTicks * 1000) / ticksPerSecond, 0),
      processes: tree.length
    }
    if (readStat(rootPid)?.childTicks === reapedBefore) break
  }
  return reading
}

/** Busy time of the whole machine, all CPUs together, in ticks: the first line of /proc/stat less idle and iowait. */
export const parseMachineBusyTicks = (procStat: string): number => {
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = procStat.split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number)
  return user + nice + system + irq + softirq + steal
}

export const machineBusyTicks = (): number => parseMachineBusyTicks(readFileSync("/proc/stat", "utf8"))
