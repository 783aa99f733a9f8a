#!/usr/bin/env node
/**
 * `npm start` and `npm run migrate` run this first. It builds dist/ (scripts/bundle.mjs, the same build as
 * `npm run build`) only when an input is newer than the last successful build (dist/.build-stamp). The build does not
 * check types: `npm run typecheck` and `npm test` do.
 */
import { readdirSync, statSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { bundle } from "./bundle.mjs"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const stamp = join(root, "dist", ".build-stamp")
const inputs = ["src", "tsconfig.json", "package.json", "package-lock.json", "scripts/bundle.mjs"]

const newest = (path) => {
  const stat = statSync(path, { throwIfNoEntry: false })
  if (stat === undefined) return 0
  if (!stat.isDirectory()) return stat.mtimeMs
  // A directory's own time changes when a file in it is added, removed or renamed.
  return readdirSync(path).reduce((max, name) => Math.max(max, newest(join(path, name))), stat.mtimeMs)
}

const lastBuild = statSync(stamp, { throwIfNoEntry: false })?.mtimeMs ?? -1
if (Math.max(...inputs.map((input) => newest(join(root, input)))) >= lastBuild) {
  process.stderr.write("building dist/ from src/ (esbuild, without a type check: `npm run typecheck` does that)…\n")
  try {
    process.stderr.write(`built in ${(await bundle(root)).toFixed(1)} s\n`)
  } catch (error) {
    // esbuild has printed what it could not read; anything else is said here.
    if (!Array.isArray(error?.errors)) process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`)
    process.exit(1)
  }
}
