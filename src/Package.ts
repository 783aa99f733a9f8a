import { existsSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const NAME = "gatehouse"

const manifestIn = (dir: string): { readonly name?: unknown; readonly version?: unknown } | undefined => {
  const path = join(dir, "package.json")
  if (!existsSync(path)) return undefined
  try {
    return JSON.parse(readFileSync(path, "utf8")) as { name?: unknown; version?: unknown }
  } catch {
    return undefined
  }
}

const find = (from: string): { readonly dir: string; readonly version: unknown } => {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = manifestIn(dir)
    if (manifest?.name === NAME) return { dir, version: manifest.version }
    if (dirname(dir) === dir) throw new Error(`no package.json named "${NAME}" above ${from}`)
  }
}

const found = find(dirname(fileURLToPath(import.meta.url)))

/**
 * The package's root directory (package.json, migrations/, policy/). Found by walking up from this module rather than
 * by a fixed number of `..`: the module runs from src/ (tests), and from the production bundle's main file or one of
 * its chunks (dist/, dist/chunks/), each at its own depth.
 */
export const PACKAGE_ROOT: string = found.dir

/** The running build's version, from package.json. */
export const VERSION: string = String(found.version)
