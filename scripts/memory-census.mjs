// Where a process's memory goes: `node --import ./scripts/memory-census.mjs dist/main.js [command]`.
//
// Every process of the tree loads it (node:cluster forks the workers with the primary's execArgv). On SIGUSR2, or
// MEMORY_CENSUS_AFTER_MS after start, each writes $MEMORY_CENSUS_DIR/census-<pid>-<n>.json (n counts the writes): its role, process.memoryUsage(),
// v8.getHeapStatistics() and getHeapSpaceStatistics(), and, with MEMORY_CENSUS_MODULES=1, every module it loaded (the
// ESM URLs seen by a module.register hook, which runs on a thread of its own and so adds its own memory: read RSS
// without it, and the module list with it; plus the CommonJS files of require.cache, which that hook does not see).
// `node scripts/memory-census.mjs <census.json>...` sums a census by package and source size.
import cluster from "node:cluster"
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { createRequire, register } from "node:module"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import v8 from "node:v8"

const dir = process.env["MEMORY_CENSUS_DIR"]
const MB = 1024 * 1024

/** The package a file belongs to (its last node_modules segment), or "gatehouse" for the program's own files. */
export const packageOf = (file) => {
  const at = file.lastIndexOf("/node_modules/")
  if (at < 0) return file.startsWith("node:") ? "node:" : "gatehouse"
  const rest = file.slice(at + "/node_modules/".length).split("/")
  return rest[0].startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]
}

const esmFile = (pid) => join(dir, `esm-${pid}.txt`)

const census = () => {
  const require = createRequire(import.meta.url)
  const esm = existsSync(esmFile(process.pid))
    ? readFileSync(esmFile(process.pid), "utf8").split("\n").filter(Boolean).map((line) => line.split(" ")[0])
    : []
  const files = new Set([
    ...esm.filter((url) => url.startsWith("file:")).map((url) => fileURLToPath(url)),
    ...Object.keys(require.cache)
  ])
  const usage = process.memoryUsage()
  const heap = v8.getHeapStatistics()
  // With --expose-gc: what is live, apart from garbage not collected yet.
  globalThis.gc?.()
  const live = globalThis.gc === undefined ? undefined : process.memoryUsage().heapUsed / MB
  return {
    pid: process.pid,
    role: cluster.isPrimary ? (process.argv.includes("migrate") ? "command" : "primary") : `worker-${cluster.worker.id}`,
    argv: process.argv.slice(2),
    execArgv: process.execArgv,
    rssMb: usage.rss / MB,
    memoryUsageMb: Object.fromEntries(Object.entries(usage).map(([k, v]) => [k, v / MB])),
    heapUsedAfterGcMb: live,
    heapMb: {
      used: heap.used_heap_size / MB,
      total: heap.total_heap_size / MB,
      external: heap.external_memory / MB,
      malloced: heap.malloced_memory / MB,
      spaces: Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, { size: s.space_size / MB, used: s.space_used_size / MB }]))
    },
    modules: [...files].map((file) => ({ file, bytes: existsSync(file) ? statSync(file).size : 0 }))
  }
}

let written = 0
const write = () => writeFileSync(join(dir, `census-${process.pid}-${++written}.json`), JSON.stringify(census(), null, 1))

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // The summary: per census, the packages by source bytes loaded.
  for (const path of process.argv.slice(2)) {
    const c = JSON.parse(readFileSync(path, "utf8"))
    const byPackage = new Map()
    for (const { file, bytes } of c.modules) {
      const p = byPackage.get(packageOf(file)) ?? { files: 0, bytes: 0 }
      byPackage.set(packageOf(file), { files: p.files + 1, bytes: p.bytes + bytes })
    }
    const total = [...byPackage.values()].reduce((a, p) => ({ files: a.files + p.files, bytes: a.bytes + p.bytes }), { files: 0, bytes: 0 })
    const m = c.memoryUsageMb
    console.log(`## ${c.role} (pid ${c.pid}) rss ${m.rss.toFixed(1)} heapUsed ${m.heapUsed.toFixed(1)} heapTotal ${m.heapTotal.toFixed(1)} ` +
      `external ${m.external.toFixed(1)} arrayBuffers ${m.arrayBuffers.toFixed(1)} MB; ${total.files} files, ${(total.bytes / MB).toFixed(1)} MB of source`)
    console.log("spaces (size/used MB): " + Object.entries(c.heapMb.spaces).map(([k, s]) => `${k} ${s.size.toFixed(1)}/${s.used.toFixed(1)}`).join(", "))
    for (const [name, p] of [...byPackage].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, Number(process.env["TOP"] ?? 25))) {
      console.log(`  ${(p.bytes / 1024).toFixed(0).padStart(6)} kB ${String(p.files).padStart(4)} files  ${name}`)
    }
  }
} else if (dir !== undefined) {
  if (process.env["MEMORY_CENSUS_MODULES"] === "1") {
    register("./memory-census-hooks.mjs", import.meta.url, { data: { file: esmFile(process.pid) } })
  }
  process.on("SIGUSR2", write)
  const after = Number(process.env["MEMORY_CENSUS_AFTER_MS"] ?? 0)
  if (after > 0) setTimeout(write, after).unref()
}
