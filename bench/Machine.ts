import { execFileSync } from "node:child_process"
import { cpus, loadavg } from "node:os"

export interface MachineInfo {
  readonly cpus: number
  readonly cpuModel: string
  readonly node: string
  readonly loadAverageBefore: ReadonlyArray<number>
  readonly loadAverageAfter: ReadonlyArray<number>
}

export const machineInfo = (loadAverageBefore: ReadonlyArray<number>): MachineInfo => ({
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model.trim() ?? "unknown CPU",
  node: process.version,
  loadAverageBefore,
  loadAverageAfter: loadavg()
})

/** Clock ticks per second of the times in /proc/<pid>/stat (USER_HZ, nearly always 100). */
export const ticksPerSecond = (): number => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
  } catch {
    return 100
  }
}

/** The commit measured, marked when src/ or migrations/ differ from it (dist/ is built from them). */
export const commitOf = (repo: string): string => {
  try {
    const head = execFileSync("git", ["-C", repo, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim()
    const changed = execFileSync("git", ["-C", repo, "status", "--porcelain", "--", "src", "migrations"], { encoding: "utf8" }).trim()
    return changed === "" ? head : `${head}+changes`
  } catch {
    return "unknown"
  }
}
