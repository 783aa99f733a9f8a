import { readFileSync } from "node:fs"
import { processTree } from "./ProcessCpu.js"

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

const isNode = (pid: number): boolean => {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "node"
  } catch {
    return false
  }
}

/**
 * Each node process of a server's tree by role: "single" for a server of one process, else "primary" and
 * "worker-1", "worker-2", … in the order they started (a replacement takes the place of the worker it replaced).
 */
export const treeMemory = (rootPid: number): ReadonlyMap<string, ProcessMemory> => {
  const tree = processTree(rootPid).filter((p) => isNode(p.pid))
  const workers = tree.filter((p) => p.pid !== rootPid).sort((a, b) => a.startTicks - b.startTicks || a.pid - b.pid)
  const roles: Array<[string, number]> = [
    [workers.length === 0 ? "single" : "primary", rootPid],
    ...workers.map((w, i): [string, number] => [`worker-${i + 1}`, w.pid])
  ]
  return new Map(roles.flatMap(([role, pid]) => {
    const memory = readMemory(pid)
    return memory === undefined ? [] : [[role, memory] as const]
  }))
}

/** Per role: the RSS at idle, and its mean and max over the samples taken under load. */
export interface MemoryRow {
  readonly role: string
  readonly idleRssMb: number | undefined
  readonly loadMeanRssMb: number | undefined
  readonly loadMaxRssMb: number | undefined
  readonly loadMaxPssMb: number | undefined
}

/** The rows of one server: every role seen at idle or under load, "total" (the sum per sample) last. */
export const memoryRows = (
  idle: ReadonlyMap<string, ProcessMemory>,
  samples: ReadonlyArray<ReadonlyMap<string, ProcessMemory>>
): ReadonlyArray<MemoryRow> => {
  const withTotal = (sample: ReadonlyMap<string, ProcessMemory>): ReadonlyMap<string, ProcessMemory> =>
    new Map([...sample, ["total", [...sample.values()].reduce((a, m) => ({ rssMb: a.rssMb + m.rssMb, pssMb: a.pssMb + m.pssMb }), { rssMb: 0, pssMb: 0 })]])
  const idleAll = withTotal(idle)
  const loadAll = samples.map(withTotal)
  const roles = [...new Set([...idleAll.keys(), ...loadAll.flatMap((s) => [...s.keys()])])]
    .sort((a, b) => (a === "total" ? 1 : b === "total" ? -1 : a.localeCompare(b, "en", { numeric: true })))
  return roles.map((role) => {
    const seen = loadAll.flatMap((s) => (s.has(role) ? [s.get(role)!] : []))
    const rss = seen.map((m) => m.rssMb)
    return {
      role,
      idleRssMb: idleAll.get(role)?.rssMb,
      loadMeanRssMb: rss.length === 0 ? undefined : rss.reduce((a, b) => a + b, 0) / rss.length,
      loadMaxRssMb: rss.length === 0 ? undefined : Math.max(...rss),
      loadMaxPssMb: seen.length === 0 ? undefined : Math.max(...seen.map((m) => m.pssMb))
    }
  })
}

/** Samples a server's tree every `intervalMs` until stopped. */
export class MemorySampler {
  private readonly samples: Array<ReadonlyMap<string, ProcessMemory>> = []
  private readonly timer: NodeJS.Timeout
  constructor(private readonly rootPid: number, intervalMs = 1000) {
    this.timer = setInterval(() => this.samples.push(treeMemory(this.rootPid)), intervalMs)
    this.timer.unref()
  }
  stop(): ReadonlyArray<ReadonlyMap<string, ProcessMemory>> {
    clearInterval(this.timer)
    return this.samples
  }
}
