import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PGlite } from "@electric-sql/pglite"
import type { TestProject } from "vitest/node"

declare module "vitest" {
  export interface ProvidedContext {
    /** A tarball of a freshly initialised PGlite cluster, or "" on a real PostgreSQL (see TestDatabase). */
    readonly pgliteTemplate: string
  }
}

/**
 * On PGlite, initdb runs once per `vitest run` instead of once per test database: 2 to 9 s each on 2 cores, for the
 * hundred-odd databases the suite makes, where starting from this copy of its result takes about half a second.
 */
export default async function setup(project: TestProject): Promise<() => void> {
  // As TestDatabase reads it: with a real PostgreSQL there is no PGlite to start.
  if ((process.env["DATABASE_URL"] ?? "").trim() !== "") {
    project.provide("pgliteTemplate", "")
    return () => undefined
  }
  const dir = mkdtempSync(join(tmpdir(), "gatehouse-pglite-template-"))
  const file = join(dir, "initdb.tar")
  const db = await PGlite.create()
  try {
    writeFileSync(file, Buffer.from(await (await db.dumpDataDir("none")).arrayBuffer()))
  } finally {
    await db.close()
  }
  project.provide("pgliteTemplate", file)
  return () => rmSync(dir, { recursive: true, force: true })
}
