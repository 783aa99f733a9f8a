import { execFileSync } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { parseProcCgroup } from "../src/platform/process/ContainerCpus.js"

/*
 * A memory cgroup for the soak's server: the limit a container would put on Gatehouse, enforced by the same kernel
 * mechanism (`docker run --memory` writes these files). The server's tree runs inside it for the whole soak; the
 * kernel reclaims page cache at the limit and kills a process (the OOM killer) when what it cannot reclaim does not
 * fit. The soak then reports the peak the group was charged (the limit itself once reclaim had to make room) and the
 * kills. (v1's failcnt would count the times the limit was hit, but stays 0 on the 6.x kernels tried.)
 *
 * Two things a container would be charged for but a group made here would not, and how the soak closes the gap:
 * - node's own code is already resident, charged to whoever mapped it first (the bench runs on the same binary):
 *   the server runs a private copy of node, written past the page cache (dd oflag=direct), so the server's tree is
 *   charged for every page of it that it touches, as in a fresh container;
 * - pages the server's first process touches before it is moved in stay charged outside: it is moved at once after
 *   spawn, before it has loaded a module (cgroup v1 on older kernels also moves its charges with it,
 *   move_charge_at_immigrate; newer ones refuse that setting).
 */

/** Where this process's memory cgroup is: v1's memory hierarchy, or v2's unified one. */
export interface CgroupPlace {
  readonly version: 1 | 2
  /** The path inside the hierarchy, "/" for its root. */
  readonly path: string
}

/** This process's memory cgroup from /proc/self/cgroup: v1's "N:memory:/path" line first, else v2's "0::/path". */
export const cgroupPlace = (procSelfCgroup: string): CgroupPlace | undefined => {
  const lines = parseProcCgroup(procSelfCgroup)
  const v1 = lines.find((line) => line.controllers.includes("memory"))
  if (v1 !== undefined) return { version: 1, path: v1.path }
  const v2 = lines.find((line) => line.hierarchy === "0" && line.controllers.length === 0)
  return v2 === undefined ? undefined : { version: 2, path: v2.path }
}

/** "key value" lines (memory.stat, memory.events, memory.oom_control) as numbers by key. */
export const keyValues = (text: string): ReadonlyMap<string, number> =>
  new Map(text.split("\n").flatMap((line) => {
    const [key, value] = line.trim().split(/\s+/)
    return key === undefined || key === "" || value === undefined || !/^\d+$/.test(value) ? [] : [[key, Number(value)]]
  }))

/** What the group was charged, in MB, and how it fared against its limit. */
export interface CgroupReading {
  readonly limitMb: number
  /** The most the group was charged at once: anonymous memory, page cache and kernel memory of its processes. */
  readonly peakMb: number | undefined
  /** Charged now, and of it anonymous memory (what cannot be reclaimed without swap) and page cache. */
  readonly currentMb: number
  readonly anonMb: number | undefined
  readonly fileMb: number | undefined
  /** Processes the kernel killed for want of memory in the group. */
  readonly oomKills: number | undefined
}

const MB = 1024 * 1024

/** A memory cgroup of its own (made by createMemoryCgroup): put a process in, read it, remove it when empty. */
export interface MemoryCgroup {
  readonly directory: string
  readonly limitMb: number
  readonly enter: (pid: number) => void
  readonly read: () => CgroupReading
  readonly remove: () => void
}

const CGROUP_ROOT = "/sys/fs/cgroup"

const number = (file: string): number | undefined => {
  try {
    const text = readFileSync(file, "utf8").trim()
    return /^\d+$/.test(text) ? Number(text) : undefined
  } catch {
    return undefined
  }
}

/**
 * A child of this process's memory cgroup limited to `limitMb` (no swap beyond it), or why it cannot be made here
 * (no cgroup filesystem, not writable: not root, or v2 without the memory controller delegated).
 */
export const createMemoryCgroup = (limitMb: number, name: string): MemoryCgroup | string => {
  const place = existsSync("/proc/self/cgroup") ? cgroupPlace(readFileSync("/proc/self/cgroup", "utf8")) : undefined
  if (place === undefined) return "no memory cgroup in /proc/self/cgroup"
  const parent = place.version === 1 ? join(CGROUP_ROOT, "memory", place.path) : join(CGROUP_ROOT, place.path)
  const directory = join(parent, name)
  const limitFile = place.version === 1 ? "memory.limit_in_bytes" : "memory.max"
  try {
    mkdirSync(directory)
  } catch (error) {
    return `cannot make a cgroup in ${parent}: ${error instanceof Error ? error.message : String(error)}`
  }
  const cleanUp = () => {
    try {
      rmdirSync(directory)
    } catch {
      // still populated or already gone: nothing more to do here
    }
  }
  try {
    if (!existsSync(join(directory, limitFile))) {
      cleanUp()
      return `the memory controller is not enabled in ${parent} (cgroup v${place.version})`
    }
    const bytes = String(limitMb * MB)
    writeFileSync(join(directory, limitFile), bytes)
    // No swap past the limit (where the kernel accounts swap: v1's memsw, v2's swap.max).
    if (place.version === 1 && existsSync(join(directory, "memory.memsw.limit_in_bytes"))) {
      writeFileSync(join(directory, "memory.memsw.limit_in_bytes"), bytes)
    }
    if (place.version === 2 && existsSync(join(directory, "memory.swap.max"))) writeFileSync(join(directory, "memory.swap.max"), "0")
    if (place.version === 1 && existsSync(join(directory, "memory.move_charge_at_immigrate"))) {
      try {
        writeFileSync(join(directory, "memory.move_charge_at_immigrate"), "3")
      } catch {
        // Deprecated, and refused by newer kernels (EINVAL on 6.x): the process is moved in before it loads anything.
      }
    }
  } catch (error) {
    cleanUp()
    return `cannot set the limit in ${directory}: ${error instanceof Error ? error.message : String(error)}`
  }

  const read = (): CgroupReading => {
    const file = (name: string) => join(directory, name)
    const stat = keyValues(readFileSync(file("memory.stat"), "utf8"))
    if (place.version === 1) {
      return {
        limitMb,
        peakMb: (number(file("memory.max_usage_in_bytes")) ?? 0) / MB,
        currentMb: (number(file("memory.usage_in_bytes")) ?? 0) / MB,
        anonMb: stat.has("total_rss") ? stat.get("total_rss")! / MB : undefined,
        fileMb: stat.has("total_cache") ? stat.get("total_cache")! / MB : undefined,
        oomKills: keyValues(readFileSync(file("memory.oom_control"), "utf8")).get("oom_kill")
      }
    }
    const events = keyValues(readFileSync(file("memory.events"), "utf8"))
    const peak = number(file("memory.peak"))
    return {
      limitMb,
      peakMb: peak === undefined ? undefined : peak / MB,
      currentMb: (number(file("memory.current")) ?? 0) / MB,
      anonMb: stat.has("anon") ? stat.get("anon")! / MB : undefined,
      fileMb: stat.has("file") ? stat.get("file")! / MB : undefined,
      oomKills: events.get("oom_kill")
    }
  }
  return {
    directory,
    limitMb,
    enter: (pid) => writeFileSync(join(directory, "cgroup.procs"), String(pid)),
    read,
    remove: cleanUp
  }
}

/**
 * A copy of the node binary at `path` whose pages are in no page cache (dd oflag=direct): a process started from it
 * is charged for every page of node's code it touches, where one started from the node the bench runs on shares
 * pages already charged to the bench.
 */
export const privateNode = (path: string): string => {
  execFileSync("dd", [`if=${process.execPath}`, `of=${path}`, "bs=1M", "oflag=direct", "status=none"])
  chmodSync(path, 0o755)
  return path
}
