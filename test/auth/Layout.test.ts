import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve, sep } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"

/*
 * The auth server's floor plan (DESIGN.md): features sit on shared floors and never import each other; what two
 * features need moves down a floor. A folder that is in neither list fails too, so a new one gets a place here.
 */

const FEATURES = ["signup", "token", "verify", "otp", "recover", "resend", "profile", "logout", "admin", "invite", "settings", "external", "landing", "sso"]
const FLOORS = ["users", "sessions", "messages", "limits", "domain", "http", "oauth"]

const AUTH = resolve(dirname(fileURLToPath(import.meta.url)), "../../src/auth")

const filesUnder = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? filesUnder(path) : path.endsWith(".ts") ? [path] : []
  })

/** The src/auth folder a path lies in, or undefined for the contract files at the top and anything outside. */
const folderOf = (path: string): string | undefined => {
  const parts = relative(AUTH, path).split(sep)
  return parts.length > 1 && parts[0] !== ".." ? parts[0] : undefined
}

const IMPORT = /(?:import|export)\s[^"']*?from\s*["']([^"']+)["']|import\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g

const relativeImports = (file: string): ReadonlyArray<string> =>
  [...readFileSync(file, "utf8").matchAll(IMPORT)]
    .map((match) => match[1] ?? match[2] ?? match[3]!)
    .filter((specifier) => specifier.startsWith("."))
    .map((specifier) => resolve(dirname(file), specifier))

/** Every import that breaks the floor plan, as "file -> imported file". */
const violations = (): ReadonlyArray<string> =>
  filesUnder(AUTH).flatMap((file) => {
    const from = folderOf(file)
    if (from === undefined) return []
    return relativeImports(file).flatMap((target) => {
      const to = folderOf(target)
      const sideways = FEATURES.includes(from) && to !== undefined && to !== from && FEATURES.includes(to)
      const upwards = FLOORS.includes(from) && to !== undefined && FEATURES.includes(to)
      return sideways || upwards ? [`${relative(AUTH, file)} -> ${relative(AUTH, target)}`] : []
    })
  })

describe("src/auth layout", () => {
  it("every folder is a feature or a floor", () => {
    const folders = readdirSync(AUTH).filter((name) => statSync(join(AUTH, name)).isDirectory())
    expect(folders.filter((name) => !FEATURES.includes(name) && !FLOORS.includes(name))).toEqual([])
  })

  it("no feature imports another feature, and no floor imports a feature", () => {
    expect(violations()).toEqual([])
  })

  it("the scan sees imports (it would catch a sideways one)", () => {
    const imports = relativeImports(join(AUTH, "token", "TokenHttp.ts")).map((target) => relative(AUTH, target))
    expect(imports).toContain(join("sessions", "Sessions.js"))
  })
})
