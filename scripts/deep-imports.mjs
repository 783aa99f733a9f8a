#!/usr/bin/env node
// Rewrites named imports from the effect, @effect/platform(-node) and @effect/sql(-pg) barrels into one deep import per
// module, in every .ts file under the given folders (default: src/); effect's pipe, identity, flow, ... come from
// effect/Function:
//
//   import { HttpApi, type HttpApp, HttpServer as Server } from "@effect/platform"
// becomes
//   import * as HttpApi from "@effect/platform/HttpApi"
//   import type * as HttpApp from "@effect/platform/HttpApp"
//   import * as Server from "@effect/platform/HttpServer"
//
// Why: each barrel loads every module of its package. @effect/platform's brings HttpApiScalar and HttpApiSwagger
// (megabytes of bundled UI source) and platform-node's brings @effect/cluster, @effect/rpc and msgpackr, into every
// process (a bare node importing the @effect/platform barrel holds a 38 MB heap, 16 MB with the deep imports).
// @effect/sql's brings its event journal and log server, and with them @effect/experimental, msgpackr (a native
// addon) and uuid. The effect barrel loads all of effect's modules where a worker uses about three quarters of them: 8 MB of heap
// in each process (docs/plans/issue-30-memory.md).
// Each barrel only re-exports its modules as namespaces (`export * as X from "./X.js"`), which this relies on: it
// checks that each imported name is a module of the package and stops, changing nothing, otherwise.
//
// Idempotent: a file with no barrel import is left as it is. Usage: node scripts/deep-imports.mjs [dir...]
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const BARRELS = ["@effect/platform", "@effect/platform-node", "@effect/sql", "@effect/sql-pg", "effect"]
// The effect barrel also re-exports these functions of effect/Function by name.
const FUNCTIONS = new Set(["absurd", "flow", "hole", "identity", "pipe", "unsafeCoerce"])
const require = createRequire(join(ROOT, "package.json"))

/** The modules a barrel re-exports, read from the package's exports map. */
const modulesOf = (pkg) => {
  const manifest = JSON.parse(readFileSync(require.resolve(`${pkg}/package.json`), "utf8"))
  return new Set(Object.keys(manifest.exports).filter((key) => /^\.\/[A-Z]\w*$/.test(key)).map((key) => key.slice(2)))
}
const MODULES = new Map(BARRELS.map((pkg) => [pkg, modulesOf(pkg)]))

const files = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return name === "node_modules" || name === "gen" ? [] : files(path)
    return /\.tsx?$/.test(name) && !name.endsWith(".d.ts") ? [path] : []
  })

// `import [type] { ... } from "<barrel>"` at the start of a line, the braces possibly over several lines.
const IMPORT = /^import(\s+type)?\s*\{([^}]*)\}\s*from\s*"(@effect\/platform(?:-node)?|@effect\/sql(?:-pg)?|effect)";?[ \t]*$/gm

const rewrite = (source, path) =>
  source.replace(IMPORT, (_whole, typeOnly, names, pkg) => {
    const modules = MODULES.get(pkg)
    const parts = names.split(",").map((part) => part.trim()).filter((part) => part !== "")
    const functions = []
    const lines = parts.flatMap((part) => {
      const match = /^(type\s+)?(\w+)(?:\s+as\s+(\w+))?$/.exec(part)
      if (match !== null && pkg === "effect" && FUNCTIONS.has(match[2])) {
        functions.push(part)
        return []
      }
      if (match === null || !modules.has(match[2])) throw new Error(`${path}: cannot rewrite "${part}" from "${pkg}"`)
      const type = typeOnly !== undefined || match[1] !== undefined ? "type " : ""
      return [`import ${type}* as ${match[3] ?? match[2]} from "${pkg}/${match[2]}"`]
    })
    const named = functions.length === 0 ? [] : [`import${typeOnly ?? ""} { ${functions.join(", ")} } from "effect/Function"`]
    return [...lines, ...named].join("\n")
  })

const dirs = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ["src"]
const changed = []
// Everything is rewritten in memory first: one import it cannot rewrite stops it before any file is written.
const rewritten = dirs.flatMap((dir) => files(resolve(ROOT, dir))).map((path) => {
  const before = readFileSync(path, "utf8")
  return { path, before, after: rewrite(before, relative(ROOT, path)) }
})
for (const { after, before, path } of rewritten) {
  if (after === before) continue
  writeFileSync(path, after)
  changed.push(relative(ROOT, path))
}
process.stdout.write(`deep-imports: ${changed.length} file(s) rewritten${changed.length > 0 ? `:\n  ${changed.join("\n  ")}` : ""}\n`)
