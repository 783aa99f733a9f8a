import { readFileSync } from "node:fs"
import { availableParallelism } from "node:os"
import { join } from "node:path"
import * as Option from "effect/Option"

/*
 * How many CPUs this process may use. os.availableParallelism() counts the machine's (or the cpuset's) CPUs, but a
 * container limited by a CPU quota (docker --cpus=2, a Kubernetes CPU limit) sees every core of the host: sized
 * from that, a 2-CPU container on a 32-core host would fork 32 workers, each with its own heap and pool, and be
 * throttled. The quota is in the cgroup: v2's cpu.max, v1's cpu.cfs_quota_us over cpu.cfs_period_us.
 */

/** Whole CPUs a quota allows: a fraction rounds up (1.5 CPUs can keep two threads busy), at least one. */
const cpusOf = (quota: number, period: number): Option.Option<number> =>
  Number.isFinite(quota) && Number.isFinite(period) && quota > 0 && period > 0
    ? Option.some(Math.max(1, Math.ceil(quota / period)))
    : Option.none()

const INTEGER = /^\d+$/

/** cgroup v2's cpu.max, "$MAX $PERIOD": "max 100000" is no limit, "150000 100000" is 2 CPUs; None when unreadable. */
export const cpusFromCgroupV2 = (cpuMax: string): Option.Option<number> => {
  const fields = cpuMax.trim().split(/\s+/)
  if (fields.length < 1 || fields.length > 2 || fields[0] === "max") return Option.none()
  const [quota, period = "100000"] = fields
  return INTEGER.test(quota!) && INTEGER.test(period) ? cpusOf(Number(quota), Number(period)) : Option.none()
}

/** cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us: a quota of -1 is no limit; None when unreadable. */
export const cpusFromCgroupV1 = (quota: string, period: string): Option.Option<number> => {
  const q = quota.trim()
  const p = period.trim()
  return INTEGER.test(q) && INTEGER.test(p) ? cpusOf(Number(q), Number(p)) : Option.none()
}

/** A line of /proc/self/cgroup, "hierarchy-id:controllers:path". */
interface CgroupLine {
  readonly hierarchy: string
  readonly controllers: ReadonlyArray<string>
  readonly path: string
}

/** The lines of /proc/self/cgroup; a line that does not read as one is skipped. */
export const parseProcCgroup = (text: string): ReadonlyArray<CgroupLine> =>
  text.split("\n").flatMap((line) => {
    const first = line.indexOf(":")
    const second = line.indexOf(":", first + 1)
    if (first < 0 || second < 0) return []
    const path = line.slice(second + 1)
    if (!path.startsWith("/")) return []
    const controllers = line.slice(first + 1, second)
    return [{ hierarchy: line.slice(0, first), controllers: controllers === "" ? [] : controllers.split(","), path }]
  })

/** `path` and each of its ancestors up to "/", deepest first: a limit set on any of them applies. */
export const ancestors = (path: string): ReadonlyArray<string> => {
  const parts = path.split("/").filter((part) => part !== "" && part !== "." && part !== "..")
  return Array.from({ length: parts.length + 1 }, (_, i) => "/" + parts.slice(0, parts.length - i).join("/"))
}

const readText = (path: string): Option.Option<string> => {
  try {
    return Option.some(readFileSync(path, "utf8"))
  } catch {
    return Option.none()
  }
}

const smallest = (limits: ReadonlyArray<Option.Option<number>>): Option.Option<number> => {
  const found = limits.flatMap((limit) => (Option.isSome(limit) ? [limit.value] : []))
  return found.length === 0 ? Option.none() : Option.some(Math.min(...found))
}

/**
 * The CPU quota of this process's cgroup and its ancestors, in whole CPUs; None when there is none (or no cgroup
 * can be read). Inside a container the cgroup path of /proc/self/cgroup may be the host's while the container's
 * own cgroup is mounted at the root of /sys/fs/cgroup: walking up to the root finds it there too.
 */
export const cgroupCpuLimit = (files: { readonly procSelfCgroup: string; readonly sysFsCgroup: string } = {
  procSelfCgroup: "/proc/self/cgroup",
  sysFsCgroup: "/sys/fs/cgroup"
}): Option.Option<number> => {
  const lines = Option.match(readText(files.procSelfCgroup), { onNone: () => [], onSome: parseProcCgroup })
  const v2 = lines.find((line) => line.hierarchy === "0" && line.controllers.length === 0)
  const v1 = lines.find((line) => line.controllers.includes("cpu"))
  // v1's cpu controller is mounted as "cpu,cpuacct" (its controllers, in the order listed), or alone as "cpu".
  const v1Mounts = v1 === undefined ? [] : [...new Set([v1.controllers.join(","), "cpu,cpuacct", "cpuacct,cpu", "cpu"])]
  const v1Limit = v1 === undefined ? Option.none<number>() : smallest(v1Mounts.flatMap((mount) =>
    ancestors(v1.path).map((path) => {
      const dir = join(files.sysFsCgroup, mount, path)
      return Option.flatMap(
        Option.all([readText(join(dir, "cpu.cfs_quota_us")), readText(join(dir, "cpu.cfs_period_us"))]),
        ([quota, period]) => cpusFromCgroupV1(quota, period)
      )
    })
  ))
  const v2Limit = v2 === undefined ? Option.none<number>() : smallest(
    ancestors(v2.path).map((path) => Option.flatMap(readText(join(files.sysFsCgroup, path, "cpu.max")), cpusFromCgroupV2))
  )
  return smallest([v1Limit, v2Limit])
}

/** CPUs this process may use: the machine's, capped by a cgroup CPU quota; at least one. */
export const usableCpus = (cores: number, limit: Option.Option<number>): number =>
  Math.max(1, Math.min(Math.max(1, Math.floor(cores)), Option.getOrElse(limit, () => Number.POSITIVE_INFINITY)))

/** This process's CPUs: os.availableParallelism() capped by its container's CPU quota. */
export const containerCpus = (): number => usableCpus(availableParallelism(), cgroupCpuLimit())
