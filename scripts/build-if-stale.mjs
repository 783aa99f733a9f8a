#!/usr/bin/env node
/**
 * `npm start` and `npm run migrate` run this first. tsc spends many seconds even when nothing changed, so the
 * build runs only when an input is newer than the last successful build (dist/.build-stamp).
 */
import { spawnSync } from "node:child_process"
import { readdirSync, statSync, utimesSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const stamp = join(root, "dist", ".build-stamp")
const inputs = ["src", "tsconfig.json", "tsconfig.build.json", "package.json", "package-lock.json"]

const newest = (path) => {
  const stat = statSync(path, { throwIfNoEntry: false })
  if (stat === undefined) return 0
  if (!stat.isDirectory()) return stat.mtimeMs
  // A directory's own time changes when a file in it is added, removed or renamed.
  return readdirSync(path).reduce((max, name) => Math.max(max, newest(join(path, name))), stat.mtimeMs)
}

const lastBuild = statSync(stamp, { throwIfNoEntry: false })?.mtimeMs ?? -1
if (Math.max(...inputs.map((input) => newest(join(root, input)))) >= lastBuild) {
  // The stamp takes the time the build started, so a file saved while tsc runs makes the next start build again.
  const startedAt = new Date()
  const build = spawnSync("npm", ["run", "build"], { cwd: root, stdio: "inherit" })
  // A failed build emits files too (tsc does not stop on type errors), so only success writes the stamp.
  if (build.status !== 0) process.exit(build.status ?? 1)
  writeFileSync(stamp, "")
  utimesSync(stamp, startedAt, startedAt)
}
